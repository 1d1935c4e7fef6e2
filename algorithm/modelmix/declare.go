package modelmix

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
	eta, tau, err := o.rates(k)
	if err != nil {
		return nil, err
	}
	return []accounting.Step{o.record(p, eta, tau)}, nil
}

// record is the record of a ModelMix step with step size eta and mixing threshold tau.
func (o *Optimizer) record(p optim.BatchPlan, eta, tau float64) accounting.Step {
	c := o.cfg.ClipNorm
	rec := p.Record(c, o.cfg.NoiseMultiplier*c, eta)
	rec.MixWidth = tau * p.Norm / eta
	rec.LinfParts = o.cfg.LinfParts
	return rec
}
