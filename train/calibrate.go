package train

import (
	"fmt"

	"github.com/dptrain/dptrain/accounting"
	"github.com/dptrain/dptrain/accounting/modes"

	"github.com/dptrain/dptrain/data"
	"github.com/dptrain/dptrain/optim"
)

// calibrate returns the smallest noise multiplier σ (to a relative tolerance of 1e-4, rounded
// up) for which the stopping accountant's ε after the planned steps is at most the target.
//
// The record is the one the optimizer itself declares for σ = 1; every field that depends on σ
// (NoiseMultiplier, NoiseStd = σ·Sensitivity) is linear in it. The live accountant still checks every real step
// against the target, so a calibration that were off could only stop training early, never
// overshoot.
func (t *Trainer) calibrate(sgld *optim.LangevinConstants) (float64, error) {
	cfg := t.cfg
	if sgld != nil {
		return 0, fmt.Errorf("dp-sgld: noise_multiplier auto is not supported (its ε depends on the whole step-size schedule): give σ explicitly and read ε from dptrain account compare")
	}
	o := cfg.Optimizer
	probe := o
	probe.NoiseMultiplier = NoiseMultiplier{Value: 1}
	var decl optim.Declarer
	var err error
	sched := optim.Constant{Rate: o.LearningRate}
	switch o.Algorithm {
	case AlgorithmModelMix:
		decl, err = optim.NewModelMix(optim.ModelMixConfig{NoiseMultiplier: 1, ClipNorm: o.ClipNorm, LinfParts: o.ModelMix.LinfParts,
			Schedule: sched, MixRatio: o.ModelMix.Gap}, t.noise)
	default:
		decl, err = optim.NewDPSGD(optim.DPSGDConfig{NoiseMultiplier: 1, ClipNorm: o.ClipNorm, Schedule: sched}, t.noise)
	}
	if err != nil {
		return 0, err
	}
	info := batchInfo(t.sampler, data.BatchInfo{}, o.BatchSize)
	unit, err := decl.Declare(info)
	if err != nil {
		return 0, err
	}
	if len(unit) != 1 {
		return 0, fmt.Errorf("calibration expects one record per step, the optimizer declares %d", len(unit))
	}
	run := accountingRun(cfg, stubRule(o.Update), t.train.Len(), nil)
	step := unit[0]
	step.Count = t.total
	newAcct := func() (accounting.Accountant, error) { return modes.New(cfg.Privacy.StopAccountant, run) }
	sigma, _, err := accounting.CalibrateStep(newAcct, step, cfg.Privacy.TargetEpsilon, cfg.Privacy.Delta)
	if err != nil {
		return 0, fmt.Errorf("privacy.target_epsilon: %w", err)
	}
	return sigma, nil
}

// stubRule names an update rule for the run declaration before the optimizer exists.
type stubRule string

func (s stubRule) UpdateRule() string { return string(s) }
