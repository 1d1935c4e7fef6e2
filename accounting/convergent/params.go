package convergent

import (
	"fmt"
	"math"

	"github.com/dptrain/dptrain/accounting"
)

// relTol is the relative tolerance for "the same constant" across steps.
const relTol = 1e-9

// Requirements lists the assumptions of the Chien & Li bounds and who vouches for each. Those
// marked Checked are verified by the constructors (run level) or by Compose (every step); the
// others cannot be observed by an accountant and are the user's declaration.
var Requirements = []struct {
	Assumption string
	Checked    bool
}{
	{"only the last iterate is released (Run.LastIterateOnly)", true},
	{"plain SGD update, no momentum/Adam state (Run.UpdateRule == \"sgd\")", true},
	{"iterates projected onto a closed convex set of diameter D > 0 after the noise is added (Run.DomainDiameter)", true},
	{"loss class declared: non-convex with (L, λ)-Hölder gradients, or convex / m-strongly convex and L-smooth (Run.Convexity, Smoothness, HolderExponent, StrongConvexity)", true},
	{"convex classes: K-Lipschitz loss with clipping at a norm ≥ K or none (Run.Lipschitz, Step.Sensitivity); η ≤ 2/L (convex), η ≤ 1/L and m ≤ L (strongly convex)", true},
	{"Gaussian noise, replace-one neighbours, constant η, σ, K and batch size, the sampling scheme of the theorem (Step)", true},
	{"shuffled cyclic: b divides n and batch indices run cyclically (ShuffledOnce)", true},
	{"every step updates the whole model, not one coordinate block (Step.Block == 0)", true},
	{"the declared L, λ, m and K hold for every per-example loss over the whole domain and every possible data point (not computable for ReLU networks)", false}, // Chien & Li, Section 3: a global bound
	{"W_0, the batch sampler and the noise are independent of the data; noise is fresh N(0, σ²I) on all coordinates", false},
	{"no intermediate iterate, evaluation or checkpoint is released or used for decisions", false},
}

// theorem names the bound an accountant implements; it selects the sampling scheme checked.
type theorem int

const (
	fullBatch  theorem = iota // Theorems 3.1 and 3.7
	subsampled                // Theorem 3.12
	cyclic                    // Theorem A.1
	lastStep                  // output perturbation
)

// params are the constants of one run, fixed by the Run and the first step.
type params struct {
	n, b      int
	eta       float64 // step size η
	sigma     float64 // parameter-space noise std σ
	k         float64 // per-example gradient bound K
	l, lambda float64 // Hölder (smoothness) constant L and exponent λ
	m         float64 // strong convexity
	d         float64 // domain diameter D
	convexity accounting.Convexity
	sampling  accounting.Sampling
}

// u is the per-step sensitivity of the update, 2ηK/b (replace-one; b = n for full batch).
func (p params) u() float64 { return 2 * p.eta * p.k / float64(p.b) }

// delta is c − 1 for the Lipschitz constant c of the gradient map (Lemma 3.4): ηL for L-smooth
// non-convex losses, 0 for convex, −ηm for strongly convex. It is only meaningful for λ = 1.
func (p params) delta() float64 {
	switch p.convexity {
	case accounting.Convex:
		return 0
	case accounting.StronglyConvex:
		return -p.eta * p.m
	}
	return p.eta * p.l
}

// smooth reports whether the bound uses the linear map of Lemma 3.4 (λ = 1).
func (p params) smooth() bool { return p.lambda == 1 }

// holderExponent reads Run.HolderExponent: 0 (unset) means 1, smooth.
func holderExponent(run accounting.Run) float64 {
	if run.HolderExponent == 0 {
		return 1
	}
	return run.HolderExponent
}

func positiveFinite(x float64) bool { return x > 0 && !math.IsInf(x, 1) }

// checkRun verifies the run-level assumptions shared by every bound of the package. The
// output-perturbation baseline needs less (needClass false): no declared loss class.
func checkRun(run accounting.Run, needClass bool) error {
	if !run.LastIterateOnly {
		return &accounting.RequirementError{Reason: "hidden-state bounds cover releasing the last iterate only",
			Fix: "set %s or use a composition accountant", Fields: []string{"Run.LastIterateOnly"}}
	}
	if run.UpdateRule != "sgd" {
		return fmt.Errorf("update rule %q is not covered: the bound needs plain noisy SGD (\"sgd\"); momentum or Adam carry noisy gradients across steps", run.UpdateRule)
	}
	if run.DatasetSize <= 0 {
		return fmt.Errorf("dataset size %d: declare n > 0", run.DatasetSize)
	}
	if !positiveFinite(run.DomainDiameter) {
		return fmt.Errorf("domain diameter %v: the bound needs the iterates projected onto a bounded convex set; project onto a ball and declare its diameter", run.DomainDiameter)
	}
	if lam := run.HolderExponent; lam < 0 || lam > 1 || math.IsNaN(lam) {
		return fmt.Errorf("Hölder exponent %v is outside (0, 1] (0 means 1, smooth)", lam)
	}
	if run.Lipschitz < 0 || math.IsNaN(run.Lipschitz) || math.IsInf(run.Lipschitz, 1) {
		return fmt.Errorf("Lipschitz constant %v: declare a finite K ≥ 0 (0: use the clip norm)", run.Lipschitz)
	}
	if !needClass {
		if s := run.Smoothness; s < 0 || math.IsNaN(s) || math.IsInf(s, 1) {
			return fmt.Errorf("smoothness %v: declare a finite L ≥ 0 (0: unknown)", s)
		}
		return nil
	}
	lam := holderExponent(run)
	if !positiveFinite(run.Smoothness) {
		return fmt.Errorf("smoothness (Hölder) constant L = %v: declare L > 0; the bound needs a global constant for every per-example gradient", run.Smoothness)
	}
	switch run.Convexity {
	case accounting.NonConvex:
	case accounting.Convex, accounting.StronglyConvex:
		if lam != 1 {
			return fmt.Errorf("convexity %q with Hölder exponent %v: the convex branches of Theorem 3.1 need an L-smooth loss (λ = 1); declare non-convex to use the Hölder bound (Theorem 3.7)", run.Convexity, lam)
		}
		if !positiveFinite(run.Lipschitz) {
			return &accounting.RequirementError{Theorem: "Chien & Li, Lemma 3.4", Reason: fmt.Sprintf("convexity %q needs the loss's Lipschitz constant K > 0, with clipping inactive (Lemma 3.4)", run.Convexity),
				Fix: "declare %s", Fields: []string{"Run.Lipschitz"}}
		}
		if run.Convexity == accounting.StronglyConvex {
			m := run.StrongConvexity
			if !positiveFinite(m) {
				return fmt.Errorf("strong convexity m = %v: declare m > 0", m)
			}
			if m > run.Smoothness {
				return fmt.Errorf("strong convexity m = %v > smoothness L = %v: no loss is both; check the declared constants", m, run.Smoothness)
			}
			// ‖∇ℓ(x) − ∇ℓ(y)‖ ≥ m‖x − y‖ on a set of diameter D forces a gradient of norm ≥ mD/2.
			if 2*run.Lipschitz < m*run.DomainDiameter {
				return fmt.Errorf("K = %v, m = %v and diameter %v are inconsistent: an m-strongly convex loss has gradients of norm ≥ mD/2 = %v somewhere on the domain", run.Lipschitz, m, run.DomainDiameter, m*run.DomainDiameter/2)
			}
		}
	case "":
		return &accounting.RequirementError{Reason: "no loss class (convexity) declared", Fix: "set %s to non-convex, convex or strongly-convex", Fields: []string{"Run.Convexity"}}
	default:
		return fmt.Errorf("unknown convexity %q: want non-convex, convex or strongly-convex", run.Convexity)
	}
	return nil
}

// stepParams derives the constants of step s under theorem th and the run, checking every
// step-level assumption. prev, when non-nil, holds the constants of the steps already
// composed; they must not change.
func stepParams(run accounting.Run, th theorem, s accounting.Step, prev *params) (params, error) {
	var p params
	if err := s.Validate(); err != nil {
		return p, err
	}
	if s.Mechanism != accounting.Gaussian {
		return p, fmt.Errorf("mechanism %q: the bound covers Gaussian noise only", s.Mechanism)
	}
	if s.Block != 0 {
		return p, fmt.Errorf("step updates block %d: the shifted-divergence bounds are for noisy steps on the whole model (noise in every coordinate to absorb the shifts); use mbcd for block coordinate descent", s.Block)
	}
	if s.Neighbouring != accounting.ReplaceOne {
		return p, fmt.Errorf("neighbouring %q: the Chien & Li bounds are stated for replace-one neighbours (sensitivity 2ηK/b); declare replace-one", s.Neighbouring)
	}
	n := run.DatasetSize
	if s.DatasetSize != 0 && s.DatasetSize != n {
		return p, fmt.Errorf("step declares dataset size %d but the run has %d", s.DatasetSize, n)
	}
	p.n, p.sampling = n, s.Sampling
	switch {
	case s.Sampling == accounting.FullBatch && (th == fullBatch || th == lastStep):
		if s.BatchSize != 0 && s.BatchSize != n {
			return p, fmt.Errorf("full-batch step declares batch size %d, want n = %d", s.BatchSize, n)
		}
		p.b = n
	case s.Sampling == accounting.WithoutReplacement && (th == subsampled || th == lastStep):
		p.b = s.BatchSize
	case (s.Sampling == accounting.Shuffled || s.Sampling == accounting.ShuffledOnce) && (th == cyclic || th == lastStep):
		p.b = s.BatchSize
		if p.b <= 0 || p.b > n {
			return p, fmt.Errorf("shuffled sampling needs 0 < batch size (%d) <= n (%d)", p.b, n)
		}
		if th == cyclic && n%p.b != 0 {
			return p, fmt.Errorf("batch size %d does not divide n = %d: Theorem A.1 needs whole epochs of n/b batches; drop n mod b examples (footnote 3) and declare n = %d", p.b, n, n/p.b*p.b)
		}
	default:
		return p, fmt.Errorf("sampling %q is not covered by this bound (%s); Poisson sampling is covered by no Chien & Li theorem", s.Sampling, th.sampling())
	}
	if q := float64(p.b) / float64(n); math.Abs(s.SampleRate-q) > relTol*q {
		return p, fmt.Errorf("sample rate %v disagrees with batch size / n = %d/%d: declare SampleRate = b/n", s.SampleRate, p.b, n)
	}
	p.eta = s.StepSize
	if !positiveFinite(p.eta) {
		return p, fmt.Errorf("step size %v: declare the step size η > 0 the step applied", p.eta)
	}
	p.l, p.lambda, p.m, p.d = run.Smoothness, holderExponent(run), run.StrongConvexity, run.DomainDiameter
	p.convexity = run.Convexity
	clip := s.Sensitivity
	if clip < 0 || math.IsNaN(clip) || math.IsInf(clip, 1) {
		return p, fmt.Errorf("clip norm (Sensitivity) %v: declare a finite clip norm ≥ 0", clip)
	}
	switch p.convexity {
	case accounting.Convex, accounting.StronglyConvex:
		p.k = run.Lipschitz
		if clip != 0 && clip < p.k {
			return p, fmt.Errorf("gradients clipped at %v < K = %v: active clipping breaks the 1-Lipschitz gradient map of Lemma 3.4; clip at ≥ K, or declare the loss non-convex", clip, p.k)
		}
		limit := 2 / p.l
		if p.convexity == accounting.StronglyConvex {
			limit = 1 / p.l
		}
		if p.eta > limit*(1+1e-12) {
			return p, fmt.Errorf("step size %v exceeds %v (Lemma 3.4 needs η ≤ 2/L convex, η ≤ 1/L strongly convex): lower the step size", p.eta, limit)
		}
	default:
		// Clipping is 1-Lipschitz, so the clipped gradient is bounded by the clip norm and
		// keeps the (L, λ) constants (Chien & Li's proofs only need Π_{B_K} 1-Lipschitz).
		p.k = run.Lipschitz
		if clip > 0 && (p.k == 0 || clip < p.k) {
			p.k = clip
		}
	}
	if !positiveFinite(p.k) {
		return p, &accounting.RequirementError{Reason: "no gradient bound", Fix: "declare the Lipschitz constant (%s) or clip per-example gradients (%s)", Fields: []string{"Run.Lipschitz", "Step.Sensitivity"}}
	}
	std := s.NoiseStd
	if prod := s.NoiseMultiplier * s.Sensitivity; std == 0 {
		std = prod
	} else if s.Sensitivity != 0 && math.Abs(prod-std) > relTol*std {
		return p, fmt.Errorf("noise std %v disagrees with noise multiplier × sensitivity = %v", std, prod)
	}
	if !positiveFinite(std) {
		return p, fmt.Errorf("noise std %v: declare NoiseStd (on the summed gradient) or NoiseMultiplier and Sensitivity", std)
	}
	p.sigma = p.eta * std / float64(p.b)
	if prev != nil && th != lastStep {
		if err := sameConstants(*prev, p); err != nil {
			return p, err
		}
	}
	return p, nil
}

func (th theorem) sampling() string {
	switch th {
	case fullBatch:
		return "Theorems 3.1/3.7: full batch"
	case subsampled:
		return "Theorem 3.12: fixed-size batches without replacement"
	case cyclic:
		return "Theorem A.1: shuffled cyclic batches"
	}
	return "output perturbation: full, without-replacement or shuffled fixed-size batches"
}

// sameConstants checks that a later step has the constants the theorem fixed at the first.
func sameConstants(a, b params) error {
	if a.sampling != b.sampling {
		return fmt.Errorf("sampling changed from %q to %q within the run", a.sampling, b.sampling)
	}
	if a.b != b.b {
		return fmt.Errorf("batch size changed from %d to %d: the bound needs a constant batch size", a.b, b.b)
	}
	for _, c := range []struct {
		name string
		x, y float64
	}{{"step size η", a.eta, b.eta}, {"noise σ (η·NoiseStd/b)", a.sigma, b.sigma}, {"gradient bound K", a.k, b.k}} {
		if math.Abs(c.x-c.y) > relTol*c.x {
			// Chien & Li assume a constant η, σ, K throughout Section 3.
			return fmt.Errorf("%s changed from %v to %v: the Chien & Li bounds need it constant", c.name, c.x, c.y)
		}
	}
	return nil
}

// constants returns the numbers a bound used, for Constants methods.
func (p params) constants(steps int) map[string]float64 {
	c := map[string]float64{
		"n":              float64(p.n),
		"batch_size":     float64(p.b),
		"steps":          float64(steps),
		"sigma":          p.sigma,
		"step_size":      p.eta,
		"gradient_bound": p.k,
		"smoothness":     p.l,
		"holder_lambda":  p.lambda,
		"diameter":       p.d,
		"sensitivity_u":  p.u(),
	}
	if p.convexity == accounting.StronglyConvex {
		c["strong_convexity"] = p.m
	}
	if p.smooth() {
		c["contraction_c"] = 1 + p.delta()
	}
	return c
}
