package pld

import (
	"math"
	"testing"

	"github.com/dptrain/dptrain/accounting"
)

// The accountant takes any record and δ: a malformed record is refused by Compose and leaves
// the accountant as it was; a δ outside (0, 1) is an error; otherwise ε is finite and
// non-negative, or an error says why there is none (never NaN, ±Inf or a negative ε).
func FuzzCompose(f *testing.F) {
	// Valid records (kept cheap: the seeds run with the ordinary tests), then malformed ones.
	f.Add(256.0/60000, 1.1, uint8(20), 1e-5, false)
	f.Add(0.01, 2.0, uint8(100), 1e-6, false)
	f.Add(1.0, 4.0, uint8(3), 1e-5, true)
	f.Add(0.5, 5.0, uint8(1), 0.1, false)
	f.Add(1e-300, 1.0, uint8(255), 1e-5, false)
	f.Add(0.1, 1e3, uint8(3), 1e-300, false)
	f.Add(0.1, 0.001, uint8(1), 1e-5, false) // a step too wide for any grid: refused
	f.Add(0.0, 1.0, uint8(1), 1e-5, false)
	f.Add(-0.1, 1.0, uint8(1), 1e-5, false)
	f.Add(0.1, 0.0, uint8(1), 1e-5, false)
	f.Add(0.1, -1.0, uint8(1), 1e-5, false)
	f.Add(math.NaN(), 1.0, uint8(1), 1e-5, false)
	f.Add(0.1, math.Inf(1), uint8(1), 1e-5, false)
	f.Add(0.01, 2.0, uint8(0), 1e-5, false) // Count 0 reads as one step
	f.Add(0.01, 2.0, uint8(1), 0.0, false)
	f.Add(0.01, 2.0, uint8(1), 1.0, false)
	f.Add(0.01, 2.0, uint8(1), math.NaN(), false)
	f.Add(0.5, 2.0, uint8(1), 1e-5, true) // full batch at q ≠ 1: malformed
	f.Fuzz(func(t *testing.T, q, sigma float64, steps uint8, delta float64, full bool) {
		s := accounting.Step{Mechanism: accounting.Gaussian, Sampling: accounting.Poisson,
			Neighbouring: accounting.AddRemove, NoiseMultiplier: sigma, SampleRate: q, Count: int(steps)}
		if full {
			s.Sampling, s.Neighbouring = accounting.FullBatch, accounting.ReplaceOne
		}
		a, err := New(accounting.Run{})
		if err != nil {
			t.Fatal(err)
		}
		validDelta := delta > 0 && delta < 1
		check := func(when string) accounting.Guarantee {
			g, err := a.Epsilon(delta)
			switch {
			case !validDelta && err == nil:
				t.Fatalf("%s: δ = %v accepted: ε = %v", when, delta, g.Epsilon)
			case err == nil && (math.IsNaN(g.Epsilon) || math.IsInf(g.Epsilon, 0) || g.Epsilon < 0):
				t.Fatalf("%s: ε = %v with no error (q = %v, σ = %v, %d steps, δ = %v)", when, g.Epsilon, q, sigma, s.Steps(), delta)
			case err != nil:
				g.Epsilon = math.NaN() // no number: compared as "no answer" below
			}
			return g
		}
		before := check("no steps")
		err = a.Compose(s)
		if s.Validate() != nil && err == nil {
			t.Fatalf("malformed record %+v accepted", s)
		}
		if err != nil {
			if after := check("after a refused step"); !sameEpsilon(before.Epsilon, after.Epsilon) {
				t.Fatalf("a refused step changed ε from %v to %v", before.Epsilon, after.Epsilon)
			}
			return
		}
		check("after the step")
	})
}

// sameEpsilon reports whether two answers agree, NaN standing for an error.
func sameEpsilon(a, b float64) bool { return a == b || math.IsNaN(a) && math.IsNaN(b) }
