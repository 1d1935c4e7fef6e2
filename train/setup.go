package train

import (
	"context"
	"fmt"
	"io"
	"math"
	"path/filepath"
	"time"

	"github.com/dptrain/dptrain/data"
	"github.com/dptrain/dptrain/data/scattering"
	"github.com/dptrain/dptrain/models"
	"github.com/dptrain/dptrain/optim"
	"github.com/sirupsen/logrus"
)

// loadData finds, reads and preprocesses the configured dataset.
// LoadData reads the config's dataset and applies its preprocessing (normalisation, features,
// feature-norm bound, subsets) exactly as training does; dptrain eval uses it so a model is
// evaluated on the inputs it was trained on.
// The training split may be absent (evaluation needs only the test split).
func LoadData(ctx context.Context, cfg *Config, log *logrus.Logger) (ds *data.Dataset, train, test *data.Split, err error) {
	return loadData(ctx, cfg, 0, log, false, nil)
}

// own, when not nil, is used instead of the configured dataset (a copy: own is not modified).
func loadData(ctx context.Context, cfg *Config, seed uint64, log *logrus.Logger, needTrain bool, own *data.Dataset) (*data.Dataset, *data.Split, *data.Split, error) {
	if log == nil {
		log = logrus.New()
		log.SetOutput(io.Discard)
	}
	var ds *data.Dataset
	if own != nil {
		ds = own.Clone()
	} else {
		loc := &data.Locator{Dir: cfg.Data.Dir, Seed: seed}
		log.Infof("data: reading %s", cfg.Data.Dataset)
		var err error
		if ds, err = loc.Load(ctx, cfg.Data.Dataset); err != nil {
			return nil, nil, nil, err
		}
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
		var out *data.Dataset
		dir, err := data.DefaultCacheDir()
		log.Infof("features: %s of %d images (the first time takes minutes; the result is cached)", opts, ds.Train.Len()+ds.Test.Len())
		if err == nil {
			var hit bool
			out, hit, err = scattering.CachedFeatures(ctx, ds, opts, filepath.Join(dir, "features"))
			if hit {
				log.Infof("features: read from the cache in %s", filepath.Join(dir, "features"))
			}
		} else {
			out, err = scattering.Features(ctx, ds, opts)
		}
		if out == nil {
			return nil, nil, nil, err
		}
		if err != nil {
			log.Warnf("features computed but not cached: %v", err)
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

// modelSpec maps the config's model section onto a models.Spec for the dataset's shape.
func modelSpec(cfg ModelConfig, ds *data.Dataset) models.Spec {
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
func schedule(o OptimizerConfig, total int) (optim.Schedule, error) {
	switch o.Schedule.Kind {
	case "step":
		return optim.NewStepDecay(o.LearningRate, o.Schedule.Gamma, o.Schedule.StepEvery)
	case "cosine":
		return optim.NewCosine(o.LearningRate, o.Schedule.MinRate, total, o.Schedule.WarmupSteps)
	default:
		return optim.Constant{Rate: o.LearningRate}, nil
	}
}

// plannedSteps is the number of steps the config asks for: training.steps, or epochs passes
// over n examples (⌈E/q⌉ steps under Poisson sampling, E × steps-per-epoch otherwise).
func plannedSteps(t TrainingConfig, s data.Sampler) int {
	if t.Steps > 0 {
		return t.Steps
	}
	if poissonScheme(s) {
		return int(math.Ceil(t.Epochs/s.SampleRate() - 1e-9))
	}
	return int(math.Ceil(t.Epochs*float64(s.StepsPerEpoch()) - 1e-9))
}

// poissonScheme reports whether s draws Poisson batches (with or without rejection), whose
// size is random: never declared, and buffers sized with a margin.
func poissonScheme(s data.Sampler) bool {
	return s.Scheme() == data.SchemePoisson || s.Scheme() == data.SchemePoissonWithRejection
}

// featureProgress logs the feature extraction every 10% of each split, with the time left.
func featureProgress(log *logrus.Logger) func(split string, done, total int) {
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
