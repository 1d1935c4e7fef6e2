package pld

import (
	"math"
	"runtime"
	"strings"
	"testing"

	"github.com/dptrain/dptrain/accounting"
)

// allocated returns the bytes f allocates in total.
func allocated(f func()) uint64 {
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	f()
	runtime.ReadMemStats(&after)
	return after.TotalAlloc - before.TotalAlloc
}

// A step with σ = 0.001 has privacy losses up to 1/(2σ²) ≈ 5·10⁵: its grid at the default
// interval would take 38 GiB. The accountant refuses it at Compose, before allocating any grid,
// and says what to do.
func TestTinyNoiseRefusedBeforeAllocating(t *testing.T) {
	a, _ := New(accounting.Run{})
	var err error
	n := allocated(func() {
		err = a.Compose(accounting.Step{Mechanism: accounting.Gaussian, Sampling: accounting.Poisson, NoiseMultiplier: 0.001, SampleRate: 512.0 / 60000, Count: 352})
	})
	if err == nil {
		t.Fatal("a step whose grid needs 5·10⁹ points was accepted")
	}
	for _, want := range []string{"Run.Accountants", "rdp", "grid points", "GiB"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not mention %q", err, want)
		}
	}
	if n > 1<<20 {
		t.Errorf("refusing the step allocated %d bytes", n)
	}
	if g, err := a.Epsilon(1e-5); err != nil || g.Epsilon != 0 {
		t.Errorf("the refused step was composed: ε = %v, %v", g.Epsilon, err)
	}
}

// exactEpsilon is the exact ε(δ) of one Poisson-subsampled Gaussian step (both orders, closed
// form), by bisection on [0, hi].
func exactEpsilon(q, sigma, delta, hi float64) float64 {
	var eps float64
	for _, d := range []direction{remove, add} {
		lo, up := 0.0, hi
		for range 200 {
			mid := (lo + up) / 2
			if exactStepDelta(q, sigma, mid, d) > delta {
				lo = mid
			} else {
				up = mid
			}
		}
		eps = math.Max(eps, up)
	}
	return eps
}

// Small σ: one step's loss spans [log(1−q), ≈1/(2σ²)], more points at the default interval
// than the limit, so the grid is coarsened. Connect-the-dots on the coarser grid must still be
// above the exact ε (never under-report) and close to it, and the whole query must stay
// within a bounded amount of memory (the default grid would allocate 4·10⁶ points per order
// and per level of coarsening).
func TestCoarsenedGridStaysAboveExact(t *testing.T) {
	for _, tc := range []struct{ q, sigma float64 }{{512.0 / 60000, 0.05}, {0.1, 0.04}, {0.5, 0.08}} {
		// One step's loss reaches about (1 + 22σ)/(2σ²) (x up to 1 + 11σ): more than 2¹⁸
		// points at the default interval, so the grid must be coarsened.
		if (1+22*tc.sigma)/(2*tc.sigma*tc.sigma)/DefaultInterval <= 1<<18 {
			t.Fatalf("σ = %v fits the default grid: the case does not test coarsening", tc.sigma)
		}
		a, _ := New(accounting.Run{})
		var g accounting.Guarantee
		var err error
		n := allocated(func() {
			if err = a.Compose(accounting.Step{Mechanism: accounting.Gaussian, Sampling: accounting.Poisson, NoiseMultiplier: tc.sigma, SampleRate: tc.q}); err == nil {
				g, err = a.Epsilon(1e-5)
			}
		})
		if err != nil {
			t.Fatal(err)
		}
		want := exactEpsilon(tc.q, tc.sigma, 1e-5, 5000)
		t.Logf("q=%v σ=%v: PLD ε %.6f, exact %.6f, %d MiB allocated", tc.q, tc.sigma, g.Epsilon, want, n>>20)
		if g.Epsilon < want-1e-9 || g.Epsilon > want+1e-3 {
			t.Errorf("q=%v σ=%v: PLD ε %.8f, exact %.8f", tc.q, tc.sigma, g.Epsilon, want)
		}
		if n > 256<<20 {
			t.Errorf("q=%v σ=%v: one query allocated %d MiB", tc.q, tc.sigma, n>>20)
		}
	}
}

// The live accountant is queried after every step: at ε ≈ 100 (σ = 0.166) the composed window
// at the default interval has millions of points. Once a step's grid is cached, a query
// after one more step must cost a bounded window (2¹⁸ points), not walk and transform
// grids of millions of points.
func TestLiveQueryBounded(t *testing.T) {
	a, _ := New(accounting.Run{})
	s := accounting.Step{Mechanism: accounting.Gaussian, Sampling: accounting.Poisson, NoiseMultiplier: 0.166357, SampleRate: 512.0 / 60000, Count: 50}
	if err := a.Compose(s); err != nil {
		t.Fatal(err)
	}
	first, err := a.Epsilon(1e-5)
	if err != nil {
		t.Fatal(err)
	}
	s.Count = 1
	var next accounting.Guarantee
	n := allocated(func() {
		c := a.Clone()
		if err = c.Compose(s); err == nil {
			next, err = c.Epsilon(1e-5)
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("ε after 50 steps %.4f, after 51 %.4f; the second query allocated %d MiB", first.Epsilon, next.Epsilon, n>>20)
	if !(next.Epsilon > first.Epsilon) {
		t.Errorf("ε did not grow with a step: %v then %v", first.Epsilon, next.Epsilon)
	}
	if limit := uint64(64 << 20); n > limit {
		t.Errorf("a query after one more step allocated %d MiB, more than %d MiB", n>>20, limit>>20)
	}
}

// σ = 0.01 over 352 steps (the quick start at ε = 10⁹ with σ fixed): each step fits a coarsened
// grid, but the composed loss spans more than the window can hold even at the coarsest
// interval. The query says so, naming what to do, within bounded memory, instead of
// discretising grids of 5·10⁷ points for minutes.
func TestComposedWindowTooWideRefused(t *testing.T) {
	a, _ := New(accounting.Run{})
	if err := a.Compose(accounting.Step{Mechanism: accounting.Gaussian, Sampling: accounting.Poisson, NoiseMultiplier: 0.01, SampleRate: 512.0 / 60000, Count: 352}); err != nil {
		t.Fatal(err)
	}
	var err error
	n := allocated(func() { _, err = a.Epsilon(1e-5) })
	if err == nil || !strings.Contains(err.Error(), "Run.Accountants") {
		t.Errorf("ε of 352 steps at σ = 0.01: error %v, want one naming Run.Accountants (the front-ends translate it)", err)
	}
	if n > 256<<20 {
		t.Errorf("the query allocated %d MiB", n>>20)
	}
}
