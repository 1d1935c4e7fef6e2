package train

import (
	"encoding/binary"
	"fmt"
	"strings"

	"github.com/dptrain/dptrain/internal/augment"
	"github.com/dptrain/dptrain/optim"
)

// AugmentConfig is augmentation multiplicity (De, Berrada, Hayes, Smith & Balle, "Unlocking
// High-Accuracy Differentially Private Image Classification through Scale", 2022, Section 3.1):
// each example of a batch is augmented Multiplicity times, and the average of its copies'
// gradients is clipped, so that it still contributes at most the clip norm C and the
// accounting is unchanged. Only for image datasets (C×H×W) and algorithms that read the model
// through its per-example gradient sums (algorithm.Algorithm.DataParallel). With
// data.features, the features of every crop and flip of each training image are computed once
// (ViewTransforms: (2·CropPadding+1)² views, twice that with Flip) and the copies are drawn
// from those views, distinct while Multiplicity ≤ the number of views.
type AugmentConfig struct {
	// Multiplicity is K, the copies per example whose gradients are averaged before clipping;
	// 0 or 1: one copy (augmented if crops or flips are on).
	Multiplicity int `yaml:"multiplicity"`
	// CropPadding, when > 0, takes each copy as a random H×W crop of the image padded with
	// CropPadding zeros on every side (4 in De et al. for CIFAR-10).
	CropPadding int `yaml:"crop_padding"`
	// Flip mirrors each copy left to right with probability 1/2.
	Flip bool `yaml:"flip"`
}

// on reports whether the augmentation changes what the model sees.
func (a AugmentConfig) on() bool {
	return a.Multiplicity > 1 || a.CropPadding > 0 || a.Flip
}

// validateAugment returns the problems of data.augment that the config alone shows; the
// image's shape is checked when the data is loaded (Trainer.augmentation).
func (r *Algorithms) validateAugment(c *Config) []error {
	a := c.Data.Augment
	if !a.on() && a.Multiplicity >= 0 && a.CropPadding >= 0 {
		return nil
	}
	var errs []error
	bad := func(format string, args ...any) { errs = append(errs, fmt.Errorf(format, args...)) }
	switch {
	case a.Multiplicity < 0 || a.Multiplicity > augment.MaxMultiplicity:
		bad("data.augment.multiplicity = %d: want 1 to %d (0 or 1: one copy per example)", a.Multiplicity, augment.MaxMultiplicity)
	case a.Multiplicity > 1 && a.CropPadding == 0 && !a.Flip:
		bad("data.augment.multiplicity = %d with neither crop_padding nor flip: the copies would be identical; set crop_padding (e.g. 4) or flip: true, or multiplicity: 1", a.Multiplicity)
	}
	if a.CropPadding < 0 {
		bad("data.augment.crop_padding = %d: want 0 (no crops) or a padding ≥ 1, e.g. 4", a.CropPadding)
	}
	if c.Data.Features.Kind != "" && c.Data.FeatureNorm > 0 {
		bad("data.augment with data.features.kind = %s keeps the features of several views of every image, and data.feature_norm = %v would bound them together: remove one of data.augment and data.feature_norm", c.Data.Features.Kind, c.Data.FeatureNorm)
	}
	if alg, err := r.Lookup(c.Optimizer.Algorithm); err == nil && !alg.DataParallel {
		var ok []string
		for _, b := range r.All() {
			if b.DataParallel {
				ok = append(ok, b.Name)
			}
		}
		bad("data.augment: optimizer.algorithm %s reads the model other than through its per-example gradient sums, whose per-example average augmentation multiplicity clips: remove data.augment, or use %s", alg.Name, strings.Join(ok, ", "))
	}
	return errs
}

// augmentation returns outer (Options.Oracle, nil for none) composed with the run's
// augmentation: the model is wrapped first, so that an audit's canaries stay outside it, and
// in a data-parallel run each rank wraps its own share (Run and follow both apply
// Options.Oracle inside the sharding). The augmentation's key is 32 bytes of a stream split
// from the run's noise, drawn here, before a resume restores the noise, and its rounds are
// the optimizer's step count, which a checkpoint restores: a seeded run draws the same
// augmentations whether or not it was resumed, and on any number of ranks; an unseeded one
// draws secret ones. Without data.augment it returns outer and draws nothing.
func (t *Trainer) augmentation(outer func(optim.GradientOracle) optim.GradientOracle) (func(optim.GradientOracle) optim.GradientOracle, error) {
	a := t.cfg.Data.Augment
	if !a.on() {
		return outer, nil
	}
	cfg := augment.Config{Multiplicity: a.Multiplicity, CropPadding: a.CropPadding, Flip: a.Flip}
	if s := t.ds.Shape; len(s) == 3 {
		cfg.Shape = [3]int{s[0], s[1], s[2]}
	} else {
		return nil, fmt.Errorf("data.augment: dataset %s has examples of shape %v, not images C×H×W: remove data.augment for it", t.ds.Name, s)
	}
	if t.cfg.Data.Features.Kind != "" {
		// The features of every view were computed when the data was loaded (featureViews):
		// the copies are views.
		cfg.Views = t.train.D / max(cfg.Dim(), 1)
		if cfg.Views*cfg.Dim() != t.train.D {
			return nil, fmt.Errorf("data.augment: training rows of %d values are not views of %v features", t.train.D, t.ds.Shape)
		}
	}
	if err := cfg.Check(); err != nil {
		return nil, err
	}
	var key [32]byte
	r := t.streams.Split().Rand()
	for j := 0; j < len(key); j += 8 {
		binary.LittleEndian.PutUint64(key[j:], r.Uint64())
	}
	if cfg.Views > 0 {
		t.log.Infof("data.augment: %d copies per example drawn from the features of its %d views (crop padding %d, flip %v), their gradients averaged before clipping (De et al. 2022, Section 3.1)",
			cfg.K(), cfg.Views, cfg.CropPadding, cfg.Flip)
	} else {
		t.log.Infof("data.augment: %d copies per example (crop padding %d, flip %v), their gradients averaged before clipping (De et al. 2022, Section 3.1)",
			cfg.K(), cfg.CropPadding, cfg.Flip)
	}
	return func(m optim.GradientOracle) optim.GradientOracle {
		w, err := augment.New(m, cfg, key, func() uint64 { return uint64(t.opt.Steps()) })
		if err != nil {
			panic(err) // cfg was checked above
		}
		if outer != nil {
			return outer(w)
		}
		return w
	}, nil
}
