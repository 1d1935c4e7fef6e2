package convergent

import (
	"fmt"
	"math"

	"github.com/dptrain/dptrain/accounting"
)

// OutputPerturbation is the baseline of the paper's Figure 1: only the last step's noise is
// counted. In algorithm (1) the noise is added before the projection, so the two runs' last
// pre-noise points differ by at most
//
//	Δ = min( g(D) + u_b , D + 2ηK ),    g(D) = D + ηL·D^λ (c·D for the convex classes),
//
// for any coupling of W_{T−1}, W'_{T−1} in a domain of diameter D (Lemmas 3.4/3.8 and the 2ηK/b
// change of the batch average), and joint quasi-convexity of the Rényi divergence gives
// ε(α) = α·Δ²/(2σ²) (Chien & Li's output-perturbation line of Figure 1, corrected). Without a declared smoothness constant Δ = D + 2ηK.
// The paper's line α·D²/(2σ²) treats the release as projected before the noise; it is
// available with paperLiteral and labelled accounting.Paper.
//
// The bound holds for any step count, sampling scheme with a fixed divisor b, and varying η or
// σ: only the last step matters.
type OutputPerturbation struct {
	run          accounting.Run
	paperLiteral bool
	last         *params
	steps        int
}

// NewOutputPerturbation returns the output-perturbation accountant for run.
func NewOutputPerturbation(run accounting.Run, paperLiteral bool) (*OutputPerturbation, error) {
	if err := checkRun(run, false); err != nil {
		return nil, fmt.Errorf("output perturbation: %w", err)
	}
	return &OutputPerturbation{run: run, paperLiteral: paperLiteral}, nil
}

// Name implements accounting.Accountant.
func (a *OutputPerturbation) Name() string {
	if a.paperLiteral {
		return "output-perturbation-paper"
	}
	return "output-perturbation"
}

// Label implements accounting.Accountant.
func (a *OutputPerturbation) Label() accounting.Label {
	if a.paperLiteral {
		return accounting.Paper
	}
	return accounting.Certified
}

// Clone implements accounting.Accountant.
func (a *OutputPerturbation) Clone() accounting.Accountant {
	c := *a
	return &c
}

// Compose implements accounting.Accountant.
func (a *OutputPerturbation) Compose(s accounting.Step) error {
	p, err := stepParams(a.run, lastStep, s, nil)
	if err != nil {
		return fmt.Errorf("output perturbation: %w", err)
	}
	a.last = &p
	a.steps += s.Steps()
	return nil
}

// Sensitivity returns Δ of the last step (D with paperLiteral).
func (a *OutputPerturbation) Sensitivity() float64 {
	if a.last == nil {
		return 0
	}
	p := *a.last
	if a.paperLiteral {
		return p.d
	}
	delta := p.d + 2*p.eta*p.k
	if p.l > 0 && p.convexity != "" {
		g := growth{coef: p.eta * p.l, lambda: p.lambda}
		if p.smooth() {
			g = growth{coef: p.delta(), lambda: 1}
		}
		delta = math.Min(delta, g.apply(p.d)+p.u())
	}
	return delta
}

// Rho returns ε(α)/α = Δ²/(2σ²), rounded up.
func (a *OutputPerturbation) Rho() (float64, int) {
	if a.last == nil {
		return 0, 0
	}
	d := a.Sensitivity()
	return roundUp(d * d / (2 * a.last.sigma * a.last.sigma)), a.steps - 1
}

// RDP returns ε(α) = ρ·α.
func (a *OutputPerturbation) RDP(alpha float64) (float64, error) {
	if !(alpha > 1) || math.IsInf(alpha, 1) {
		return 0, fmt.Errorf("output perturbation: order %v: want a finite α > 1", alpha)
	}
	rho, _ := a.Rho()
	return roundUp(rho * alpha), nil
}

// Epsilon implements accounting.Accountant.
func (a *OutputPerturbation) Epsilon(delta float64) (accounting.Guarantee, error) {
	return linearGuarantee(a.Name(), a.Label(), a.Rho, delta)
}

// Constants returns every number the bound used, keyed by name.
func (a *OutputPerturbation) Constants() map[string]float64 {
	if a.last == nil {
		return map[string]float64{"diameter": a.run.DomainDiameter, "steps": 0}
	}
	c := a.last.constants(a.steps)
	c["sensitivity_delta"] = a.Sensitivity()
	c["rho"], _ = a.Rho()
	return c
}
