package config

import (
	"fmt"
	"strings"

	"github.com/dptrain/dptrain/train/internal/augment"
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

// On reports whether the augmentation changes what the model sees.
func (a AugmentConfig) On() bool {
	return a.Multiplicity > 1 || a.CropPadding > 0 || a.Flip
}

// validateAugment returns the problems of data.augment that the config alone shows; the
// image's shape is checked when the data is loaded (train.Trainer.augmentation).
func (r *Algorithms) validateAugment(c *Config) []error {
	a := c.Data.Augment
	if !a.On() && a.Multiplicity >= 0 && a.CropPadding >= 0 {
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
