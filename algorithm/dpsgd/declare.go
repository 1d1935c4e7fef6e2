package dpsgd

import (
	"github.com/dptrain/dptrain/accounting"
	"github.com/dptrain/dptrain/data"
	"github.com/dptrain/dptrain/optim"
)

// Declare implements optim.Declarer.
func (o *Optimizer) Declare(info data.BatchInfo) ([]accounting.Step, error) {
	return o.DeclareStep(o.k, info)
}

// DeclareStep implements optim.StepDeclarer.
func (o *Optimizer) DeclareStep(k int, info data.BatchInfo) ([]accounting.Step, error) {
	p, err := optim.PlanBatch(info, optim.DeclaredBatch(info))
	if err != nil {
		return nil, err
	}
	lr := o.cfg.Schedule.StepSize(k)
	if err := optim.CheckStepSize(lr, k); err != nil {
		return nil, err
	}
	return []accounting.Step{p.Record(o.cfg.ClipNorm, o.std(), lr)}, nil
}

// std is the noise standard deviation on the clipped gradient sum (0 for the baseline).
func (o *Optimizer) std() float64 {
	if o.cfg.NoiseMultiplier > 0 {
		return o.cfg.NoiseMultiplier * o.cfg.ClipNorm
	}
	return 0
}
