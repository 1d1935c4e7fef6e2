package models

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/dptrain/dptrain/layer"
)

// materialised returns example i's weight and bias gradient, P_iᵀG_i and G_iᵀ1, in float64.
func materialised(a, g []float32, geo layer.Geometry, i int) []float64 {
	r, d, k := geo.Rows, geo.In, geo.Out
	out := make([]float64, d*k+k)
	for p := range r {
		ap, gp := a[(i*r+p)*d:], g[(i*r+p)*k:]
		for x := range d {
			for y := range k {
				out[x*k+y] += float64(ap[x]) * float64(gp[y])
			}
		}
		if geo.Bias {
			for y := range k {
				out[d*k+y] += float64(gp[y])
			}
		}
	}
	return out
}

// TestKernelsClipPerExample checks the exported kernels against per-example materialisation
// on dense and conv geometries (both the Gram and the per-example product branch): each
// squared norm, and the sensitivity contract: the clipped sum equals the sum of the
// individually clipped gradients, each of norm ≤ C, at any input scale, with a crafted large
// example anywhere in the batch.
func TestKernelsClipPerExample(t *testing.T) {
	const m, clip = 5, 1.0
	geos := []struct {
		name string
		geo  layer.Geometry
	}{
		{"dense", layer.Geometry{Rows: 1, In: 7, Out: 3, Bias: true}},
		{"dense no bias", layer.Geometry{Rows: 1, In: 4, Out: 6}},
		{"conv gram", layer.Geometry{Rows: 4, In: 18, Out: 8, Bias: true}},
		{"conv per-example", layer.Geometry{Rows: 49, In: 9, Out: 4, Bias: true}},
	}
	rng := rand.New(rand.NewPCG(1, 2))
	for _, tc := range geos {
		if got := tc.geo.Rows > 1 && tc.geo.UseGram(); got != (tc.name == "conv gram") {
			t.Fatalf("%s: useGram %v: the table does not cover the branch it names", tc.name, got)
		}
		for _, scale := range []float64{1e-3, 1, 1e4} {
			for crafted := range m {
				r, d, k := tc.geo.Rows, tc.geo.In, tc.geo.Out
				a, g := make([]float32, m*r*d), make([]float32, m*r*k)
				for i := range a {
					a[i] = float32(scale * rng.NormFloat64())
				}
				for i := range g {
					g[i] = float32(rng.NormFloat64())
					if i/(r*k) == crafted {
						g[i] *= 1e3
					}
				}
				sq := make([]float64, m)
				buf, err := SquaredNorms(sq, a, g, tc.geo, nil)
				if err != nil {
					t.Fatal(err)
				}
				c := make([]float32, m)
				want := make([]float64, d*k+k)
				for i := range m {
					gi := materialised(a, g, tc.geo, i)
					var n2 float64
					for _, v := range gi {
						n2 += v * v
					}
					if math.Abs(sq[i]-n2) > 1e-4*n2 {
						t.Errorf("%s scale %g: example %d squared norm %v, materialised %v", tc.name, scale, i, sq[i], n2)
					}
					c[i] = float32(min(1, clip/math.Sqrt(sq[i])))
					var cn2 float64
					for j, v := range gi {
						want[j] += float64(c[i]) * v
						cn2 += float64(c[i]) * float64(c[i]) * v * v
					}
					if math.Sqrt(cn2) > clip*(1+1e-5) {
						t.Errorf("%s scale %g: example %d clipped to norm %v > C = %v", tc.name, scale, i, math.Sqrt(cn2), clip)
					}
				}
				gw, gb := make([]float32, d*k), make([]float32, k)
				if !tc.geo.Bias {
					gb = nil
				}
				if _, err := ScaledSum(gw, gb, a, g, c, tc.geo, buf); err != nil {
					t.Fatal(err)
				}
				var diff, norm float64
				for j, v := range append(gw, gb...) {
					diff += (float64(v) - want[j]) * (float64(v) - want[j])
					norm += want[j] * want[j]
				}
				if math.Sqrt(diff) > 1e-5*max(math.Sqrt(norm), clip) {
					t.Errorf("%s scale %g crafted %d: clipped sum off by %v (norm %v)", tc.name, scale, crafted, math.Sqrt(diff), math.Sqrt(norm))
				}
			}
		}
	}
	if _, err := SquaredNorms(make([]float64, 2), make([]float32, 3), make([]float32, 3), layer.Geometry{Rows: 1, In: 2, Out: 2}, nil); err == nil {
		t.Error("buffers too short for two examples were accepted")
	}
}
