package dpsgld

import (
	"math"

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
	eta, err := o.stepSize(k)
	if err != nil {
		return nil, err
	}
	return []accounting.Step{o.record(p, eta)}, nil
}

// record is the record of a DP-SGLD step with step size eta: Langevin noise √(2η)·σ on the
// parameters, expressed in units of the gradient sum, m·√(2η)·σ/η.
func (o *Optimizer) record(p optim.BatchPlan, eta float64) accounting.Step {
	std := math.Sqrt(2*eta) * o.cfg.Sigma
	return p.Record(o.cfg.Constants.Lipschitz, p.Norm*std/eta, eta)
}
