package optim

import (
	"math"

	"github.com/dptrain/dptrain/accounting"
)

// Declarer is implemented by every optimizer in this package: Declare returns the records the
// next call to Step will release for a batch drawn as info says, without touching data or
// randomness. The trainer asks the live accountant whether those records would overshoot the
// privacy target before it runs the step (the privacy contract of package accounting: stop before the step).
type Declarer interface {
	Declare(info BatchInfo) ([]accounting.Step, error)
}

// StepDeclarer is a Declarer that can also declare the records of any planned step k (counted
// from 0) without having taken the steps before it: what calibration replays for every step of
// a run, so that records depending on the step size, the block or the batch index are
// calibrated as they will be released. Declare(info) equals DeclareStep(Steps(), info).
type StepDeclarer interface {
	Declarer
	DeclareStep(k int, info BatchInfo) ([]accounting.Step, error)
}

// declaredBatch is a stand-in batch of the size info declares, for plan's public checks.
func declaredBatch(bi BatchInfo) Batch {
	info := declOf(bi)
	switch info.Sampling {
	case accounting.FullBatch:
		return Batch{N: info.DatasetSize}
	case accounting.Poisson:
		return Batch{}
	case accounting.PoissonWithRejection:
		return Batch{N: info.MinBatchSize}
	}
	return Batch{N: info.BatchSize}
}

// Declare implements Declarer.
func (o *DPSGD) Declare(info BatchInfo) ([]accounting.Step, error) { return o.DeclareStep(o.k, info) }

// DeclareStep implements StepDeclarer.
func (o *DPSGD) DeclareStep(k int, info BatchInfo) ([]accounting.Step, error) {
	p, err := plan(info, declaredBatch(info))
	if err != nil {
		return nil, err
	}
	lr := o.cfg.Schedule.StepSize(k)
	if err := checkStepSize(lr, k); err != nil {
		return nil, err
	}
	return []accounting.Step{p.record(o.cfg.ClipNorm, o.std(), lr)}, nil
}

// std is the noise standard deviation on the clipped gradient sum (0 for the baseline).
func (o *DPSGD) std() float64 {
	if o.cfg.NoiseMultiplier > 0 {
		return o.cfg.NoiseMultiplier * o.cfg.ClipNorm
	}
	return 0
}

// Declare implements Declarer.
func (o *ModelMix) Declare(info BatchInfo) ([]accounting.Step, error) {
	return o.DeclareStep(o.k, info)
}

// DeclareStep implements StepDeclarer.
func (o *ModelMix) DeclareStep(k int, info BatchInfo) ([]accounting.Step, error) {
	p, err := plan(info, declaredBatch(info))
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
func (o *ModelMix) record(p batchPlan, eta, tau float64) accounting.Step {
	c := o.cfg.ClipNorm
	rec := p.record(c, o.cfg.NoiseMultiplier*c, eta)
	rec.MixWidth = tau * p.norm / eta
	rec.LinfParts = o.cfg.LinfParts
	return rec
}

// Declare implements Declarer.
func (o *DPSGLD) Declare(info BatchInfo) ([]accounting.Step, error) { return o.DeclareStep(o.k, info) }

// DeclareStep implements StepDeclarer.
func (o *DPSGLD) DeclareStep(k int, info BatchInfo) ([]accounting.Step, error) {
	p, err := plan(info, declaredBatch(info))
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
func (o *DPSGLD) record(p batchPlan, eta float64) accounting.Step {
	std := math.Sqrt(2*eta) * o.cfg.Sigma
	return p.record(o.cfg.Constants.Lipschitz, p.norm*std/eta, eta)
}
