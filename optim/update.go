package optim

import (
	"fmt"
	"math"
)

// UpdateRule turns a privatised gradient into a parameter update. It sees only the noisy
// gradient and the (already released) parameters, so it is post-processing; but a rule that
// keeps state across steps (momentum, Adam) carries noisy gradients into later iterates, which
// hidden-state analyses and ModelMix do not cover.
type UpdateRule interface {
	// Name is the accounting.Run.UpdateRule value: "sgd", "momentum" or "adam".
	Name() string
	// Stateful reports whether Apply keeps state from one call to the next.
	Stateful() bool
	// Apply updates params in place from the privatised gradient grad with learning rate lr.
	// It panics if the lengths differ, or differ from those of earlier calls.
	Apply(params, grad []float32, lr float64)
}

// SGD is plain gradient descent θ ← θ − η·(g + WeightDecay·θ). It is stateless.
type SGD struct {
	// WeightDecay is the coefficient λ of an L2 penalty (λ/2)‖θ‖² added to the loss.
	WeightDecay float64
}

// NewSGD returns plain SGD with the given weight decay.
func NewSGD(weightDecay float64) (*SGD, error) {
	if err := checkWeightDecay(weightDecay); err != nil {
		return nil, err
	}
	return &SGD{WeightDecay: weightDecay}, nil
}

func (*SGD) Name() string   { return "sgd" }
func (*SGD) Stateful() bool { return false }
func (r *SGD) Apply(params, grad []float32, lr float64) {
	checkLen(params, grad)
	wd := r.WeightDecay
	for i, g := range grad {
		p := float64(params[i])
		params[i] = float32(p - lr*(float64(g)+wd*p))
	}
}

// Momentum is SGD with heavy-ball or Nesterov momentum μ (Polyak 1964; Sutskever et al. 2013,
// in the form PyTorch uses, without dampening):
//
//	g' = g + λθ,  v ← μ·v + g',  θ ← θ − η·v            (heavy ball)
//	                             θ ← θ − η·(g' + μ·v)    (Nesterov)
//
// v starts at 0.
type Momentum struct {
	Momentum    float64
	Nesterov    bool
	WeightDecay float64
	v           []float32
}

// NewMomentum returns momentum SGD; momentum must be in [0, 1).
func NewMomentum(momentum float64, nesterov bool, weightDecay float64) (*Momentum, error) {
	if !(momentum >= 0 && momentum < 1) {
		return nil, fmt.Errorf("optim: momentum %v is outside [0, 1)", momentum)
	}
	if err := checkWeightDecay(weightDecay); err != nil {
		return nil, err
	}
	return &Momentum{Momentum: momentum, Nesterov: nesterov, WeightDecay: weightDecay}, nil
}

func (*Momentum) Name() string { return "momentum" }

// Stateful reports true unless the momentum is 0.
func (r *Momentum) Stateful() bool { return r.Momentum != 0 }

func (r *Momentum) Apply(params, grad []float32, lr float64) {
	checkLen(params, grad)
	if r.v == nil {
		r.v = make([]float32, len(params))
	}
	checkLen(params, r.v)
	mu, wd := r.Momentum, r.WeightDecay
	for i, g := range grad {
		p := float64(params[i])
		gi := float64(g) + wd*p
		v := mu*float64(r.v[i]) + gi
		r.v[i] = float32(v)
		d := v
		if r.Nesterov {
			d = gi + mu*v
		}
		params[i] = float32(p - lr*d)
	}
}

// Adam is Kingma & Ba (2015), Algorithm 1, with bias correction: at step t,
//
//	m ← β₁m + (1−β₁)g,  v ← β₂v + (1−β₂)g²,
//	θ ← θ − η·(m/(1−β₁ᵗ)) / (√(v/(1−β₂ᵗ)) + ε).
//
// WeightDecay adds λθ to g, or with Decoupled (AdamW, Loshchilov & Hutter 2019) subtracts η·λ·θ
// from θ instead.
type Adam struct {
	Beta1, Beta2, Epsilon float64
	WeightDecay           float64
	Decoupled             bool
	m, v                  []float32
	t                     int
}

// NewAdam returns Adam; β₁, β₂ must be in [0, 1) and ε > 0 (the usual values are 0.9, 0.999,
// 1e-8).
func NewAdam(beta1, beta2, epsilon, weightDecay float64, decoupled bool) (*Adam, error) {
	if !(beta1 >= 0 && beta1 < 1) || !(beta2 >= 0 && beta2 < 1) {
		return nil, fmt.Errorf("optim: Adam betas (%v, %v) must be in [0, 1)", beta1, beta2)
	}
	if !(epsilon > 0) || math.IsInf(epsilon, 0) {
		return nil, fmt.Errorf("optim: Adam epsilon %v must be positive and finite", epsilon)
	}
	if err := checkWeightDecay(weightDecay); err != nil {
		return nil, err
	}
	return &Adam{Beta1: beta1, Beta2: beta2, Epsilon: epsilon, WeightDecay: weightDecay, Decoupled: decoupled}, nil
}

func (*Adam) Name() string   { return "adam" }
func (*Adam) Stateful() bool { return true }

func (r *Adam) Apply(params, grad []float32, lr float64) {
	checkLen(params, grad)
	if r.m == nil {
		r.m = make([]float32, len(params))
		r.v = make([]float32, len(params))
	}
	checkLen(params, r.m)
	r.t++
	b1, b2 := r.Beta1, r.Beta2
	c1 := -math.Expm1(float64(r.t) * math.Log(b1)) // 1 − β₁ᵗ
	c2 := -math.Expm1(float64(r.t) * math.Log(b2)) // 1 − β₂ᵗ
	for i, g := range grad {
		p := float64(params[i])
		gi := float64(g)
		if r.WeightDecay != 0 {
			if r.Decoupled {
				p -= lr * r.WeightDecay * p
			} else {
				gi += r.WeightDecay * p
			}
		}
		m := b1*float64(r.m[i]) + (1-b1)*gi
		v := b2*float64(r.v[i]) + (1-b2)*gi*gi
		r.m[i], r.v[i] = float32(m), float32(v)
		params[i] = float32(p - lr*(m/c1)/(math.Sqrt(v/c2)+r.Epsilon))
	}
}

func checkWeightDecay(wd float64) error {
	if !(wd >= 0) || math.IsInf(wd, 0) {
		return fmt.Errorf("optim: weight decay %v must be a finite non-negative number", wd)
	}
	return nil
}

func checkLen(a, b []float32) {
	if len(a) != len(b) {
		panic(fmt.Sprintf("optim: length mismatch: %d parameters, %d values", len(a), len(b)))
	}
}
