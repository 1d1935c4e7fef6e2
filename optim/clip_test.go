package optim

import (
	"errors"
	"math"
	"strings"
	"testing"
)

func TestClipL2(t *testing.T) {
	nan, inf := float32(math.NaN()), float32(math.Inf(1))
	for _, tc := range []struct {
		name    string
		g       []float32
		c       float64
		want    []float32
		clipped bool
		wantErr string // a non-finite input: an error, and g left as it was
	}{
		{name: "scaled", g: []float32{3, 4}, c: 1, want: []float32{0.6, 0.8}, clipped: true},
		{name: "inside", g: []float32{0.3, -0.4}, c: 1, want: []float32{0.3, -0.4}},
		{name: "on the boundary", g: []float32{3, 4}, c: 5, want: []float32{3, 4}},
		{name: "no clipping", g: []float32{3e10, 4e10}, c: math.Inf(1), want: []float32{3e10, 4e10}},
		{name: "zero", g: []float32{0, 0, 0}, c: 1, want: []float32{0, 0, 0}},
		{name: "NaN is an error", g: []float32{1, nan}, c: 1, want: []float32{1, nan}, wantErr: "coordinate 1 of 2 is NaN"},
		{name: "-Inf is an error", g: []float32{-inf, 1}, c: math.Inf(1), want: []float32{-inf, 1}, wantErr: "coordinate 0 of 2 is -Inf"},
		{name: "+Inf is an error even inside c", g: []float32{0, 0, inf}, c: math.Inf(1), want: []float32{0, 0, inf}, wantErr: "coordinate 2 of 3 is +Inf"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := append([]float32(nil), tc.g...)
			got, err := ClipL2(g, tc.c)
			if tc.wantErr != "" {
				if !errors.Is(err, ErrNotFiniteVector) || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("err = %v, want ErrNotFiniteVector saying %q", err, tc.wantErr)
				}
				for i := range g {
					if math.Float32bits(g[i]) != math.Float32bits(tc.want[i]) {
						t.Fatalf("g = %v after the error, want it unchanged (%v), never zeroed", g, tc.want)
					}
				}
				if _, err := ClipL2Linf(g, tc.c, 4); !errors.Is(err, ErrNotFiniteVector) {
					t.Errorf("ClipL2Linf: err = %v, want ErrNotFiniteVector", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got != tc.clipped {
				t.Errorf("clipped = %v, want %v", got, tc.clipped)
			}
			for i := range g {
				if math.Abs(float64(g[i]-tc.want[i])) > 1e-6*math.Max(1, math.Abs(float64(tc.want[i]))) {
					t.Errorf("g = %v, want %v", g, tc.want)
					break
				}
			}
			if !math.IsInf(tc.c, 1) && Norm2(g) > tc.c {
				t.Errorf("‖g‖ = %v > c = %v", Norm2(g), tc.c)
			}
		})
	}
}

// TestClipBiasExample is seed-003 Example 3.1: f(w, x) = (w − x)²/2 with x ∈ {−20, −10, 90}; at
// c = 1 the mean clipped gradient is +1/3 both at w = 20 (true gradient 0) and at w = 0 (true
// gradient −20).
func TestClipBiasExample(t *testing.T) {
	for _, w := range []float32{0, 20} {
		var sum float64
		for _, x := range []float32{-20, -10, 90} {
			g := []float32{w - x}
			if _, err := ClipL2(g, 1); err != nil {
				t.Fatal(err)
			}
			sum += float64(g[0])
		}
		if got := sum / 3; math.Abs(got-1.0/3) > 1e-7 {
			t.Errorf("w = %v: mean clipped gradient %v, want 1/3", w, got)
		}
	}
}

func TestClipL2Linf(t *testing.T) {
	// Hand example: (3, 4) has norm 5 = c, so l2 clipping leaves it; p = 4 truncates each
	// coordinate to 5/2.
	g := []float32{3, -4}
	if ok, err := ClipL2Linf(g, 5, 4); err != nil || !ok || g[0] != 2.5 || g[1] != -2.5 {
		t.Errorf("ClipL2Linf((3, -4), 5, 4) = %v, want (2.5, -2.5), clipped", g)
	}
	// l2 first, then l∞: (30, 40, 0) → (3, 4, 0) → (2.5, 2.5, 0) at c = 5, p = 4.
	g = []float32{30, 40, 0}
	if _, err := ClipL2Linf(g, 5, 4); err != nil {
		t.Fatal(err)
	}
	if math.Abs(float64(g[0])-2.5) > 1e-6 || math.Abs(float64(g[1])-2.5) > 1e-6 || g[2] != 0 {
		t.Errorf("ClipL2Linf((30, 40, 0), 5, 4) = %v, want (2.5, 2.5, 0)", g)
	}
	// Properties on random vectors: ‖g‖₂ ≤ c and ‖g‖∞ ≤ c/√p.
	rng := NewSeededNoise(11)
	for trial := range 200 {
		d := 1 + trial%50
		g := make([]float32, d)
		scale := math.Pow(10, float64(trial%7-3))
		rng.FillGaussian(g, scale)
		if trial%5 == 0 {
			g[0] = float32(100 * scale) // a dominant coordinate
		}
		c := 0.1 + float64(trial%13)
		p := 1 + trial%120
		if _, err := ClipL2Linf(g, c, p); err != nil {
			t.Fatal(err)
		}
		if n := Norm2(g); n > c {
			t.Fatalf("trial %d: ‖g‖₂ = %v > c = %v", trial, n, c)
		}
		bound := c / math.Sqrt(float64(p))
		for _, v := range g {
			if math.Abs(float64(v)) > bound {
				t.Fatalf("trial %d: |g_j| = %v > c/√p = %v", trial, v, bound)
			}
		}
	}
}
