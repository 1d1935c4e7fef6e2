package convergent

import (
	"fmt"
	"math"
	"testing"

	"github.com/dptrain/dptrain/accounting"
)

// TestLiveMultiplexer runs the accountants under accounting.Live beside each other, with the
// overshoot check that clones them, and checks the ε reported at the Figure-1 plateau against
// the conversion of ρ = 0.273172 computed directly.
func TestLiveMultiplexer(t *testing.T) {
	run := figure1Run(accounting.NonConvex)
	build := func(name string) (accounting.Accountant, error) {
		switch name {
		case "chien-li":
			return New(run)
		case "output-perturbation":
			return NewOutputPerturbation(run, false)
		}
		return nil, fmt.Errorf("unknown %q", name)
	}
	l, err := accounting.NewLive([]string{"chien-li", "output-perturbation"}, build)
	if err != nil {
		t.Fatal(err)
	}
	step := noisyStep(accounting.FullBatch, 1, 0.1, 5, 5, 1)
	for range 120 {
		if over, err := l.WouldOvershoot(step, 100, 1e-5, "chien-li"); err != nil || over {
			t.Fatalf("overshoot %v, %v", over, err)
		}
		if err := l.Compose(step); err != nil {
			t.Fatal(err)
		}
	}
	g, err := l.Epsilon("chien-li", 1e-5)
	if err != nil {
		t.Fatal(err)
	}
	// Direct: min over a fine grid of orders of the improved conversion of ρ·α.
	rho, want := 0.273172, math.Inf(1)
	for a := 1.5; a < 40; a += 0.001 {
		want = math.Min(want, rho*a+math.Log1p(-1/a)-(math.Log(1e-5)+math.Log(a))/(a-1))
	}
	if g.Label != accounting.Certified || math.Abs(g.Epsilon-want) > 2e-4*want || g.Epsilon < want*(1-1e-6) {
		t.Errorf("chien-li at T = 120: %+v, want ε ≈ %v (certified)", g, want)
	}
	t.Logf("chien-li ε = %.4f at α = %.2f (direct %.4f)", g.Epsilon, g.Order, want)
}
