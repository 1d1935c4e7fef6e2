package train

import (
	"context"
	"fmt"

	"github.com/dptrain/dptrain/accounting"
	"github.com/dptrain/dptrain/accounting/modes"
	"github.com/dptrain/dptrain/data"
	"github.com/dptrain/dptrain/optim"
)

// maxCalibratedSteps is the most planned steps calibrate replays: it asks the optimizer for
// every planned step's records, so its work grows with the step count (measured on the quick
// start: 10⁷ steps in 12 s). A run planned longer is refused before the replay starts.
const maxCalibratedSteps = 10_000_000

// calibrateContext returns the smallest noise multiplier σ (to a relative tolerance of 1e-4,
// rounded up) for which the stopping accountant's ε after the planned steps is at most the
// target. It stops once ctx is done (a signal during start-up), while replaying the planned
// steps, probing the accountants or searching σ.
//
// The records are the ones the algorithm's own optimizer declares (optim.StepDeclarer) for
// σ = 1 at every planned step, with the batch each step will draw (data.PlannedBatch); every
// field that depends on σ (NoiseMultiplier, NoiseStd) is linear in it.
// An algorithm whose optimizer declares nothing, or whose plan refuses auto, is refused: it is
// never calibrated as another algorithm. The live accountant still checks every real step
// against the target, so a calibration that were off could only stop training early, never
// overshoot.
func (t *Trainer) calibrateContext(ctx context.Context) (float64, error) {
	cfg := t.cfg
	o := cfg.Optimizer
	if t.plan.NoAuto != "" {
		return 0, fmt.Errorf("%s", t.plan.NoAuto)
	}
	if t.total > maxCalibratedSteps {
		return 0, fmt.Errorf("optimizer.noise_multiplier auto: the run plans %d steps, and calibrating σ replays the declared records of every planned step; more than %d steps is refused: lower training.steps or training.epochs, or give optimizer.noise_multiplier a number",
			t.total, maxCalibratedSteps)
	}
	// The probe's noise source is its own: building it must not touch the run's streams.
	probe, err := t.plan.NewOptimizer(1, optim.NewSeededNoise(0))
	if err != nil {
		return 0, err
	}
	decl, ok := probe.(optim.StepDeclarer)
	if !ok {
		return 0, fmt.Errorf("optimizer.noise_multiplier auto: algorithm %s does not declare the records of its planned steps (optim.StepDeclarer), so σ cannot be calibrated: give optimizer.noise_multiplier a number", o.Algorithm)
	}
	// Replay the declared records of every planned step, all records of a step in order
	// (run-length merged: a constant schedule gives one record of Count = planned steps).
	var records, first []accounting.Step
	for k := range t.total {
		if k%4096 == 0 {
			if err := ctx.Err(); err != nil {
				return 0, fmt.Errorf("optimizer.noise_multiplier auto: calibration stopped at planned step %d of %d: %w", k, t.total, err)
			}
		}
		info := data.PlannedBatch(t.sampler, k)
		recs, err := decl.DeclareStep(k, info)
		if err != nil {
			return 0, err
		}
		if len(recs) == 0 {
			return 0, fmt.Errorf("optimizer.noise_multiplier auto: algorithm %s declares no record for step %d: it must declare what it releases", o.Algorithm, k+1)
		}
		if k == 0 {
			first = recs
		}
		for _, r := range recs {
			records = accounting.AppendRecord(records, r)
		}
	}
	run := t.declaredRun(probe)
	if len(records) > 0 {
		// Probe with every record of the first step: an accountant that covers one record of
		// a multi-record step (DP-MBCD's certified mode, one released block) may refuse the
		// step's next record.
		c, err := probeAccountants(ctx, cfg.Privacy.Accountants, run, first, cfg.Privacy.Delta)
		if err != nil {
			return 0, err
		}
		stop, err := resolveStop(cfg.Privacy, c)
		if err != nil {
			return 0, err
		}
		cfg.Privacy.StopAccountant = stop
	}
	newAcct := func() (accounting.Accountant, error) { return modes.New(cfg.Privacy.StopAccountant, run) }
	sigma, _, err := accounting.CalibrateRecordsContext(ctx, newAcct, records, cfg.Privacy.TargetEpsilon, cfg.Privacy.Delta)
	if err != nil {
		return 0, fmt.Errorf("privacy.target_epsilon: %w", err)
	}
	return sigma, nil
}
