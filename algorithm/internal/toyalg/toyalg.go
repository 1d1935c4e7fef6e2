package toyalg

import (
	"errors"
	"fmt"

	"github.com/dptrain/dptrain/accounting"
	"github.com/dptrain/dptrain/algorithm"
	"github.com/dptrain/dptrain/data"
	"github.com/dptrain/dptrain/optim"
)

// Name is the toy's optimizer.algorithm name.
const Name = "toy-gd"

// Section is optimizer.toy_gd.
type Section struct {
	// Scale multiplies the configured learning rate.
	Scale float64 `yaml:"scale"`
}

// Algorithm is the toy's registration.
func Algorithm() algorithm.Algorithm {
	return algorithm.Algorithm{
		Name: Name, Private: true, ClipNorm: true,
		Accountants: []string{"rdp"},
		Section:     "toy_gd", NewSection: func() any { return &Section{Scale: 1} },
		Validate: func(_ algorithm.Config, section any) []error {
			if err := algorithm.Positive("optimizer.toy_gd.scale", section.(*Section).Scale); err != nil {
				return []error{err}
			}
			return nil
		},
		Prepare: func(e algorithm.Env) (algorithm.Plan, error) {
			o, s := e.Config.Optimizer, e.Section.(*Section)
			return algorithm.Plan{
				Run: algorithm.ClipNormRun(e),
				NewOptimizer: func(sigma float64, noise *optim.Noise) (optim.Optimizer, error) {
					return New(sigma, o.ClipNorm, s.Scale, e.Schedule, noise)
				},
			}, nil
		},
	}
}

// Optimizer is the toy's step: θ ← θ − scale·η_k·(Σ_i clip_C(g_i) + N(0, σ²C²·I))/b, with b
// the sampler's public normaliser (optim.Normaliser).
type Optimizer struct {
	sigma, clip, scale float64
	sched              optim.Schedule
	noise              *optim.Noise
	grad               []float32
	norms              []float64
	k                  int
}

// New returns the toy optimizer.
func New(sigma, clip, scale float64, sched optim.Schedule, noise *optim.Noise) (*Optimizer, error) {
	if noise == nil || sched == nil {
		return nil, errors.New("toyalg: needs a noise source and a schedule")
	}
	if !(sigma > 0) {
		return nil, fmt.Errorf("toyalg: noise multiplier %v must be positive", sigma)
	}
	if err := optim.CheckNoiseClip(sigma, clip); err != nil {
		return nil, err
	}
	return &Optimizer{sigma: sigma, clip: clip, scale: scale, sched: sched, noise: noise}, nil
}

// stepSize is step k's scaled learning rate.
func (o *Optimizer) stepSize(k int) (float64, error) {
	lr := o.scale * o.sched.StepSize(k)
	return lr, optim.CheckStepSize(lr, k)
}

// Declare implements optim.Declarer.
func (o *Optimizer) Declare(info data.BatchInfo) ([]accounting.Step, error) {
	return o.DeclareStep(o.k, info)
}

// DeclareStep implements optim.StepDeclarer: one Gaussian record of sensitivity C and noise
// σC on the clipped gradient sum.
func (o *Optimizer) DeclareStep(k int, info data.BatchInfo) ([]accounting.Step, error) {
	p, err := optim.PlanBatch(info, optim.DeclaredBatch(info))
	if err != nil {
		return nil, err
	}
	lr, err := o.stepSize(k)
	if err != nil {
		return nil, err
	}
	return []accounting.Step{p.Record(o.clip, o.sigma*o.clip, lr)}, nil
}

// Step implements optim.Optimizer.
func (o *Optimizer) Step(m optim.GradientOracle, b data.Batch, info data.BatchInfo) (optim.Result, error) {
	p, err := optim.PlanBatch(info, b)
	if err != nil {
		return optim.Result{}, err
	}
	lr, err := o.stepSize(o.k)
	if err != nil {
		return optim.Result{}, err
	}
	params := m.Params()
	o.grad = optim.Resize(o.grad, len(params))
	var st data.Stats
	if b.N > 0 {
		o.norms = make([]float64, b.N)
		if st, err = m.ClippedGradSum(b, o.clip, o.grad, o.norms); err != nil {
			return optim.Result{}, err
		}
	}
	if !o.noise.AddGaussianScaled(o.grad, o.sigma*o.clip, 1/p.Norm) {
		return optim.Result{}, optim.ErrNotFinite
	}
	for i, g := range o.grad {
		params[i] -= float32(lr * float64(g))
	}
	o.k++
	return optim.Result{Records: []accounting.Step{p.Record(o.clip, o.sigma*o.clip, lr)}, Stats: st, StepSize: lr}, nil
}

// UpdateRule implements optim.Optimizer.
func (o *Optimizer) UpdateRule() string { return "sgd" }

// Stateful implements optim.Optimizer.
func (o *Optimizer) Stateful() bool { return false }

// Steps implements optim.Optimizer.
func (o *Optimizer) Steps() int { return o.k }

// State implements optim.Checkpointer: the step counter.
func (o *Optimizer) State() (map[string][]float32, map[string]float64) {
	return map[string][]float32{}, map[string]float64{optim.StateSteps: float64(o.k)}
}

// Restore implements optim.Checkpointer.
func (o *Optimizer) Restore(vecs map[string][]float32, sc map[string]float64) error {
	if err := optim.CheckStateNames("toy", vecs, sc, nil, []string{optim.StateSteps}); err != nil {
		return err
	}
	k, err := optim.StateCount(sc, optim.StateSteps, "step count")
	if err != nil {
		return err
	}
	o.k = k
	return nil
}

// NoiseStream implements optim.NoiseDrawer: the stream the optimizer was built with.
func (o *Optimizer) NoiseStream() *optim.Noise { return o.noise }
