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
// The records are the ones the algorithm's own optimizer declares (optim.Declarer) for σ = 1;
// every field that depends on σ (NoiseMultiplier, NoiseStd = σ·Sensitivity) is linear in it.
// An algorithm whose optimizer declares nothing, or whose plan refuses auto, is refused: it is
// never calibrated as another algorithm. The live accountant still checks every real step
// against the target, so a calibration that were off could only stop training early, never
// overshoot.
func (t *Trainer) calibrate() (float64, error) {
	cfg := t.cfg
	o := cfg.Optimizer
	if t.plan.NoAuto != "" {
		return 0, fmt.Errorf("%s", t.plan.NoAuto)
	}
	// The probe's noise source is its own: building it must not touch the run's streams.
	probe, err := t.plan.NewOptimizer(1, optim.NewSeededNoise(0))
	if err != nil {
		return 0, err
	}
	decl, ok := probe.(optim.Declarer)
	if !ok {
		return 0, fmt.Errorf("optimizer.noise_multiplier auto: algorithm %s does not declare its steps' records (optim.Declarer), so σ cannot be calibrated: give optimizer.noise_multiplier a number", o.Algorithm)
	}
	info := batchInfo(t.sampler, data.BatchInfo{}, o.BatchSize)
	unit, err := decl.Declare(info)
	if err != nil {
		return 0, err
	}
	if len(unit) != 1 {
		return 0, fmt.Errorf("calibration expects one record per step, the optimizer declares %d", len(unit))
	}
	run := t.declaredRun(probe)
	step := unit[0]
	step.Count = t.total
	newAcct := func() (accounting.Accountant, error) { return modes.New(cfg.Privacy.StopAccountant, run) }
	sigma, _, err := accounting.CalibrateRecords(newAcct, []accounting.Step{step}, cfg.Privacy.TargetEpsilon, cfg.Privacy.Delta)
	if err != nil {
		return 0, fmt.Errorf("privacy.target_epsilon: %w", err)
	}
	return sigma, nil
}
