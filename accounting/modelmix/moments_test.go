package modelmix

import (
	"math"
	"testing"
)

// relClose reports whether got is within rel of want and, because the accountant rounds
// against privacy, not below want by more than below (relative): the rounding of a printed
// reference value, or 1e-12 for a full-precision one.
func relClose(got, want, rel, below float64) bool {
	return math.Abs(got-want) <= rel*math.Abs(want) && got >= want-below*math.Abs(want)
}

// printed10 is the relative rounding of a value printed to 10 significant digits.
const printed10 = 5e-10

func TestLogMomentsReadingVectors(t *testing.T) {
	// seed-003 §4.7, "ln a_k" test vectors (the reading's Python reference, 10 digits).
	tests := []struct {
		sigma, width, shift float64
		want                map[int]float64
	}{
		{9.35, 75, 20, map[int]float64{2: 2.5578008567, 3: 11.0225377611, 4: 24.3845151485, 8: 124.261788582}},
		{9.35, 75, 4, map[int]float64{2: 0.0432757857, 3: 0.1422069269, 4: 0.3255225381, 8: 2.9853374908}},
	}
	for _, tt := range tests {
		got, err := LogMoments(8, tt.sigma, tt.width, tt.shift)
		if err != nil {
			t.Fatal(err)
		}
		if got[0] != 0 || got[1] != 0 {
			t.Errorf("σ=%v L=%v s=%v: ln a_0, ln a_1 = %v, %v, want exactly 0", tt.sigma, tt.width, tt.shift, got[0], got[1])
		}
		for k, want := range tt.want {
			if !relClose(got[k], want, 5e-9, printed10) {
				t.Errorf("σ=%v L=%v s=%v: ln a_%d = %.12g, want %.12g", tt.sigma, tt.width, tt.shift, k, got[k], want)
			}
		}
	}
}

func TestLogMomentsSlowPath(t *testing.T) {
	// Against Simpson's rule on the linear-space densities (reference_test.go), including
	// a mixing width far below σ, where the density needs the narrow-interval quadrature.
	tests := []struct{ sigma, width, shift float64 }{
		{1, 3, 0.7},
		{2, 0.5, 1},
		{1, 1e-6, 0.8},
		{0.5, 10, 1},
		{4, 40, 1},
	}
	for _, tt := range tests {
		got, err := LogMoments(6, tt.sigma, tt.width, tt.shift)
		if err != nil {
			t.Fatal(err)
		}
		for k := 2; k <= 6; k++ {
			want := math.Log(refMoment(k, tt.sigma, tt.width, tt.shift))
			// The accountant adds 1e-9 relative to every ln a_k (moments.go, marginRel).
			if math.Abs(got[k]-want) > 3e-9*math.Max(1, want) || got[k] < want-1e-12 {
				t.Errorf("σ=%v L=%v s=%v: ln a_%d = %.15g, Simpson gives %.15g", tt.sigma, tt.width, tt.shift, k, got[k], want)
			}
		}
	}
}

func TestLogMomentsGaussianLimit(t *testing.T) {
	// Width 0 is the Gaussian: ln a_k = k(k−1)s²/(2σ²) exactly; a width of 1e-5·σ must be
	// within O(width²) of it (seed-003 §4.7 (a)).
	const sigma, shift = 2.0, 1.5
	zero, err := LogMoments(10, sigma, 0, shift)
	if err != nil {
		t.Fatal(err)
	}
	tiny, err := LogMoments(10, sigma, 2e-5, shift)
	if err != nil {
		t.Fatal(err)
	}
	for k := 2; k <= 10; k++ {
		want := float64(k*(k-1)) * shift * shift / (2 * sigma * sigma)
		if zero[k] != want {
			t.Errorf("width 0: ln a_%d = %v, want %v", k, zero[k], want)
		}
		if math.Abs(tiny[k]-want) > 1e-8*want {
			t.Errorf("width 2e-5: ln a_%d = %.15g, Gaussian %.15g", k, tiny[k], want)
		}
	}
}

func TestLogMomentsErrors(t *testing.T) {
	tests := []struct {
		name                string
		kmax                int
		sigma, width, shift float64
	}{
		{"negative order", -1, 1, 1, 1},
		{"zero sigma", 4, 0, 1, 1},
		{"nan sigma", 4, math.NaN(), 1, 1},
		{"negative width", 4, 1, -1, 1},
		{"infinite width", 4, 1, math.Inf(1), 1},
		{"negative shift", 4, 1, 1, -1},
		{"grid too large", 4096, 1e-3, 1, 1},
	}
	for _, tt := range tests {
		if _, err := LogMoments(tt.kmax, tt.sigma, tt.width, tt.shift); err == nil {
			t.Errorf("%s: want an error", tt.name)
		}
	}
}

func TestConvexityOfHk(t *testing.T) {
	// Theorem 4.1's worst case (a one-hot, or Hamming-weight-p, shift) rests on the convexity
	// of g(x) = h_k(√x) = ln a_k(shift √x), which the paper asserts "by simple calculation"
	// and the reading checked numerically (seed-003 §4.7 (d)). Regression guard: second
	// differences on x ∈ [0, 400] are non-negative for the reading's (σ, L) pairs.
	configs := []struct{ sigma, width float64 }{{6.8, 225}, {9.35, 75}, {9.35, 10}, {20, 5}, {2, 50}}
	const dx = 25.0
	for _, c := range configs {
		var g [][]float64
		for x := 0.0; x <= 400; x += dx {
			la, err := LogMoments(10, c.sigma, c.width, math.Sqrt(x))
			if err != nil {
				t.Fatal(err)
			}
			g = append(g, la)
		}
		for _, k := range []int{2, 3, 5, 10} {
			for i := 1; i+1 < len(g); i++ {
				d2 := g[i-1][k] - 2*g[i][k] + g[i+1][k]
				if d2 < -1e-9*math.Max(1, g[i][k]) {
					t.Errorf("σ=%v L=%v k=%d: h_k(√x) not convex at x=%v (second difference %v)", c.sigma, c.width, k, float64(i)*dx, d2)
				}
			}
		}
	}
}
