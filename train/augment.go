package train

import (
	"encoding/binary"
	"fmt"

	"github.com/dptrain/dptrain/optim"
	"github.com/dptrain/dptrain/train/internal/augment"
)

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
	if !a.On() {
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
