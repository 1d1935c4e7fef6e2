package train

import (
	"fmt"
	"slices"
)

// ema is the exponential moving average of the iterates that training.ema asks for (De,
// Berrada, Hayes, Smith & Balle, "Unlocking High-Accuracy Differentially Private Image
// Classification through Scale", Section 3: parameter averaging), with their warm-up of the
// decay: after step t, avg ← d_t·avg + (1 − d_t)·θ_t with d_t = min(d, (1 + t)/(10 + t)), so
// that the first iterates are not weighted by the initialisation.
//
// The average is a function of every iterate released by the optimizer's records: it is
// post-processing for the composition accountants, which bound the release of every iterate
// (rdp, pld, gdp), and it is NOT covered by the hidden-state accountants, which bound the last
// iterate alone; with training.ema set the run declares that it releases more than its last
// iterate (see declaredRun).
type ema struct {
	decay float64
	avg   []float32
}

// newEMA returns the average of decay d starting from params (nil when d is 0: no average).
func newEMA(d float64, params []float32) *ema {
	if d == 0 {
		return nil
	}
	return &ema{decay: d, avg: slices.Clone(params)}
}

// update folds the iterate after step t (counted from 1) into the average.
func (e *ema) update(params []float32, t int) {
	if e == nil {
		return
	}
	d := min(e.decay, float64(1+t)/float64(10+t))
	for i, p := range params {
		e.avg[i] = float32(d*float64(e.avg[i]) + (1-d)*float64(p))
	}
}

// swap exchanges the average with params in place (twice restores both).
func (e *ema) swap(params []float32) {
	if e == nil {
		return
	}
	for i := range params {
		params[i], e.avg[i] = e.avg[i], params[i]
	}
}

// restore replaces the average by a checkpoint's (nil: the run's checkpoint has none, which
// is an error when the run averages).
func (e *ema) restore(v []float32, path string) error {
	if e == nil {
		return nil
	}
	if len(v) != len(e.avg) {
		return fmt.Errorf("checkpoint %s holds no average of the iterates for training.ema (or one of another size): resume with the config that wrote it", path)
	}
	copy(e.avg, v)
	return nil
}
