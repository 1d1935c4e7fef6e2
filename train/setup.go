package train

import (
	"context"
	"fmt"
	"math"
	"path/filepath"
	"slices"
	"time"

	"github.com/dptrain/dptrain/algorithm"
	"github.com/dptrain/dptrain/data"
	"github.com/dptrain/dptrain/data/scattering"
	"github.com/dptrain/dptrain/models"
	"github.com/dptrain/dptrain/optim"
	"github.com/dptrain/dptrain/train/config"
	"github.com/dptrain/dptrain/train/internal/augment"
)

// loadData finds, reads and preprocesses the configured dataset.
// LoadData reads the config's dataset and applies its preprocessing (normalisation, features,
// feature-norm bound, subsets) exactly as training does; dptrain eval uses it so a model is
// evaluated on the inputs it was trained on.
// The training split may be absent (evaluation needs only the test split).
func LoadData(ctx context.Context, cfg *config.Config, log Logger) (ds *data.Dataset, train, test *data.Split, err error) {
	return loadData(ctx, cfg, 0, log, false, nil)
}

// own, when not nil, is used instead of the configured dataset (a copy: own is not modified).
func loadData(ctx context.Context, cfg *config.Config, seed uint64, log Logger, needTrain bool, own *data.Dataset) (*data.Dataset, *data.Split, *data.Split, error) {
	if log == nil {
		log = discard{}
	}
	var ds *data.Dataset
	if own != nil {
		ds = own.Clone()
	} else {
		loc := &data.Locator{Dir: cfg.Data.Dir, Seed: seed, Classes: cfg.Data.Classes}
		if cfg.Data.Path != "" {
			loc.Dir = cfg.Data.Path
		}
		log.Infof("data: reading %s", cfg.Data.Dataset)
		var err error
		if ds, err = loc.Load(ctx, cfg.Data.Dataset); err != nil {
			return nil, nil, nil, err
		}
	}
	// Labels and widths before anything else: a damaged file is named before a step spends
	// privacy on it.
	if err := ds.Check(); err != nil {
		return nil, nil, nil, err
	}
	if n := ds.Train.NonFinite(); n > 0 {
		log.Warnf("data: %d training examples of %s have NaN or infinite inputs: each is clipped to zero (contributes nothing) whenever it is sampled", n, ds.Name)
	}
	if needTrain && ds.Train.Len() == 0 {
		return nil, nil, nil, fmt.Errorf("dataset %s at %s has no training split (only test files were found): point data.dir at a directory with the training files, or run dptrain data download --dataset %s",
			ds.Name, ds.Source, ds.Name)
	}
	if ds.Classes < 2 {
		return nil, nil, nil, fmt.Errorf("dataset %s is not a classification dataset (classes = %d)", ds.Name, ds.Classes)
	}
	if err := ds.Normalize(cfg.Data.Normalize); err != nil {
		return nil, nil, nil, err
	}
	// The subsets first: every later step maps each example on its own, so taking them later
	// would only compute features nobody uses.
	ds.Train, ds.Test = ds.Train.Head(cfg.Data.TrainSubset), ds.Test.Head(cfg.Data.TestSubset)
	if f := cfg.Data.Features; f.Kind == "scatternet" {
		opts := scattering.Options{J: f.J, L: f.L, Groups: f.Groups, Progress: featureProgress(log)}
		log.Infof("features: %s of %d images (the first time takes minutes; the result is cached)", opts, ds.Train.Len()+ds.Test.Len())
		out, err := scatterFeatures(ctx, ds, opts, log)
		if err != nil {
			return nil, nil, nil, err
		}
		if a := cfg.Data.Augment; needTrain && a.On() {
			if err := featureViews(ctx, ds, out, a, opts, log); err != nil {
				return nil, nil, nil, err
			}
		}
		ds = out
	}
	if r := cfg.Data.FeatureNorm; r > 0 {
		if err := ds.BoundNorm(r); err != nil {
			return nil, nil, nil, err
		}
	}
	return ds, ds.Train, ds.Test, nil
}

// scatterFeatures returns the scattering features of ds, through the disk cache when there is
// one.
func scatterFeatures(ctx context.Context, ds *data.Dataset, opts scattering.Options, log Logger) (*data.Dataset, error) {
	dir, err := data.DefaultCacheDir()
	if err != nil {
		return scattering.Features(ctx, ds, opts)
	}
	out, hit, err := scattering.CachedFeatures(ctx, ds, opts, filepath.Join(dir, "features"))
	if hit {
		log.Infof("features: read from the cache in %s", filepath.Join(dir, "features"))
	}
	if out == nil {
		return nil, err
	}
	if err != nil {
		log.Warnf("features computed but not cached: %v", err)
	}
	return out, nil
}

// featureViews replaces feat's training split by one whose row i holds the features of every
// view of training image i (augment.Config.ViewTransforms: the image itself first, then its
// crops and flips), so that augmentation multiplicity can average over views whose features
// are too slow to compute at every step. Each view is a fixed map of its own image, computed
// once (and cached) for the whole training set: no example's views depend on another example.
func featureViews(ctx context.Context, img, feat *data.Dataset, a config.AugmentConfig, opts scattering.Options, log Logger) error {
	if len(img.Shape) != 3 {
		return fmt.Errorf("data.augment: dataset %s has examples of shape %v, not images C×H×W: remove data.augment for it", img.Name, img.Shape)
	}
	cfg := augment.Config{CropPadding: a.CropPadding, Flip: a.Flip, Shape: [3]int{img.Shape[0], img.Shape[1], img.Shape[2]}}
	if err := cfg.Check(); err != nil {
		return err
	}
	views := cfg.ViewTransforms()
	if len(views) > augment.MaxViews {
		return fmt.Errorf("data.augment: crop_padding %d and flip %v make %d views of every image, whose features would all be kept: the most is %d; lower crop_padding", a.CropPadding, a.Flip, len(views), augment.MaxViews)
	}
	base := feat.Train
	n, d := base.N, base.D
	log.Infof("features: %d views of each of the %d training images (%d more transforms; %.1f GB of features)", len(views), n, len(views)-1, float64(len(views)*n*d*4)/1e9)
	out := &data.Split{X: make([]float32, n*d*len(views)), Y: base.Y, N: n, D: d * len(views)}
	put := func(v int, s *data.Split) {
		for i := range n {
			copy(out.X[(i*len(views)+v)*d:(i*len(views)+v+1)*d], s.X[i*d:(i+1)*d])
		}
	}
	put(0, base)
	id := img.Train.D
	for v, t := range views[1:] {
		moved := &data.Split{X: make([]float32, n*id), Y: img.Train.Y, N: n, D: id}
		for i := range n {
			cfg.Apply(moved.X[i*id:(i+1)*id], img.Train.Row(i), t)
		}
		vds := *img // shallow: only the training split and the preprocessing change
		vds.Preprocessing = append(slices.Clone(img.Preprocessing), fmt.Sprintf("view dy=%d dx=%d flip=%v", t.DY, t.DX, t.Flip))
		vds.Train, vds.Test = moved, &data.Split{}
		f, err := scatterFeatures(ctx, &vds, opts, log)
		if err != nil {
			return fmt.Errorf("data.augment: the features of view %d of %d: %w", v+2, len(views), err)
		}
		put(v+1, f.Train)
	}
	feat.Train = out
	return nil
}

// modelSpec maps the config's model section onto a models.Spec for the dataset's shape.
func modelSpec(cfg config.ModelConfig, ds *data.Dataset) models.Spec {
	if cfg.Preset != "" {
		return models.Spec{Kind: cfg.Preset, Classes: ds.Classes, Engine: cfg.Engine, WeightStandardization: cfg.WeightStandardization}
	}
	s := models.Spec{Kind: cfg.Kind, Classes: ds.Classes, Hidden: cfg.Hidden, Activation: cfg.Activation, Engine: cfg.Engine,
		WeightStandardization: cfg.WeightStandardization}
	if cfg.Bias != nil && !*cfg.Bias {
		s.NoBias = true
	}
	switch cfg.Kind {
	case "cnn":
		s.Input = append([]int(nil), ds.Shape...)
		for _, l := range cfg.Layers {
			s.Layers = append(s.Layers, models.LayerSpec{Type: l.Type, Out: l.Out, Kernel: l.Kernel, Stride: l.Stride, Padding: l.Padding, Groups: l.Groups})
		}
	default:
		s.Input = []int{ds.Dim()}
	}
	return s
}

// chunkFor is the model's chunk for batches of expected size b (a public setting): the graph
// engine runs every chunk at this fixed shape, so that no sample's result depends on how many
// share its run, and a chunk near the batch size keeps that padding cheap. b + 4√b rounded up
// to a multiple of 32 (one chunk for all but rare Poisson batches), at most the default 256.
func chunkFor(b int) int {
	if b <= 0 {
		return 0
	}
	c := (b + int(math.Ceil(4*math.Sqrt(float64(b)))) + 31) / 32 * 32
	return min(c, 256)
}

// checkModelFits reports a model whose input does not match the data.
func checkModelFits(m models.Model, ds *data.Dataset) error {
	d := 1
	for _, x := range m.InputShape() {
		d *= x
	}
	if d != ds.Dim() || m.Classes() != ds.Classes {
		return fmt.Errorf("model %s takes inputs %v with %d classes, but %s has examples %v with %d classes: choose a model for this dataset",
			m.Name(), m.InputShape(), m.Classes(), ds.Name, ds.Shape, ds.Classes)
	}
	return nil
}

// schedule builds the learning-rate schedule for total steps.
func schedule(o algorithm.OptimizerConfig, total int) (optim.Schedule, error) {
	switch o.Schedule.Kind {
	case "step":
		return optim.NewStepDecay(o.LearningRate, o.Schedule.Gamma, o.Schedule.StepEvery)
	case "cosine":
		return optim.NewCosine(o.LearningRate, o.Schedule.MinRate, total, o.Schedule.WarmupSteps)
	default:
		return optim.Constant{Rate: o.LearningRate}, nil
	}
}

// featureProgress logs the feature extraction every 10% of each split, with the time left.
func featureProgress(log Logger) func(split string, done, total int) {
	var began time.Time
	next := 0
	return func(split string, done, total int) {
		if done == 0 {
			began, next = time.Now(), 10
			return
		}
		pct := 100 * done / total
		if pct < next && done != total {
			return
		}
		next = pct/10*10 + 10
		left := time.Duration(float64(time.Since(began)) * float64(total-done) / float64(done)).Round(time.Second)
		log.Infof("features: %s split %d%% (%d of %d images), about %s left", split, pct, done, total, left)
	}
}
