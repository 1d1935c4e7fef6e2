package audit

import (
	"math"
	"math/rand/v2"
	"testing"
)

func TestGuessCounts(t *testing.T) {
	scores := []float64{0.9, -1, 3, 0.1, 2, -2}
	included := []bool{true, false, true, false, false, false}
	for _, c := range []struct {
		plus, minus, correct int
	}{
		{1, 0, 1}, // 3 (in)
		{2, 0, 1}, // 3 (in), 2 (out)
		{3, 0, 2}, // + 0.9 (in)
		{0, 2, 2}, // −2, −1 (both out)
		{2, 2, 3}, // 3, 2 | −1, −2
		{3, 3, 5}, // 3, 2, 0.9 | 0.1, −1, −2
		{0, 6, 4}, // every out is right
		{6, 0, 2}, // every in is right
		{0, 0, 0}, // abstain
	} {
		g, err := Guess(scores, included, c.plus, c.minus)
		if err != nil {
			t.Fatal(err)
		}
		if g.Correct != c.correct || g.Made() != c.plus+c.minus {
			t.Errorf("k₊ = %d, k₋ = %d: %d correct of %d, want %d", c.plus, c.minus, g.Correct, g.Made(), c.correct)
		}
	}
	if _, err := Guess([]float64{1, math.NaN()}, []bool{true, false}, 1, 0); err == nil {
		t.Error("a NaN score gave no error")
	}
	if _, err := Guess(scores, included, 4, 3); err == nil {
		t.Error("k₊ + k₋ > m gave no error")
	}
}

// Scores that reveal the secret perfectly give the bound of r all-correct guesses with the
// Bonferroni-split level; scores independent of the secret give (almost always) 0.
func TestBoundPowerAndNull(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	m := 1000
	included := make([]bool, m)
	perfect := make([]float64, m)
	null := make([]float64, m)
	for i := range included {
		included[i] = rng.IntN(2) == 1
		if included[i] {
			perfect[i] = 1 + rng.Float64()
		} else {
			perfect[i] = -1 - rng.Float64()
		}
		null[i] = rng.NormFloat64()
	}
	counts := DefaultCounts(m)
	res, err := Bound(perfect, included, counts, 0, 0.95)
	if err != nil {
		t.Fatal(err)
	}
	// Every guess is right while k ≤ min(#in, #out): the largest such k gives the bound.
	nin := 0
	for _, in := range included {
		if in {
			nin++
		}
	}
	r := 0
	for _, c := range counts {
		if c.Plus <= min(nin, m-nin) {
			r = max(r, c.Made())
		}
	}
	q := math.Pow(0.05/float64(len(counts)), 1/float64(r))
	want := math.Log(q / (1 - q))
	if res.Best.Made() != r || res.Best.Correct != r || math.Abs(res.Epsilon-want) > 1e-7 {
		t.Errorf("perfect scores: %+v, ε_lower %.9g, want %d of %d correct and %.9g", res.Best, res.Epsilon, r, r, want)
	}
	res, err = Bound(null, included, counts, 1e-5, 0.95)
	if err != nil {
		t.Fatal(err)
	}
	if res.Epsilon > 0.3 {
		t.Errorf("scores independent of the secret gave ε_lower = %g", res.Epsilon)
	}
}

func TestDefaultCounts(t *testing.T) {
	for _, m := range []int{1, 2, 10, 100, 1000} {
		cs := DefaultCounts(m)
		if m >= 2 && len(cs) == 0 {
			t.Errorf("m = %d: no counts", m)
		}
		for _, c := range cs {
			if c.Made() > m || c.Plus < 1 {
				t.Errorf("m = %d: count %+v", m, c)
			}
		}
	}
}
