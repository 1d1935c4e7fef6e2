package lifted

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/dptrain/dptrain/data"
	"gonum.org/v1/gonum/mat"
)

// TestUUpdateMatchesGridSearch checks Eq. (10) against brute-force minimisation of
// ½(z − relu(u))² + ½(u − a)² over a fine grid of u, on a grid of (a, z) that includes the case
// boundaries a = −z and a = −(√2−1)z.
func TestUUpdateMatchesGridSearch(t *testing.T) {
	h := func(u, a, z float64) float64 { r := math.Max(u, 0); return (z-r)*(z-r)/2 + (u-a)*(u-a)/2 }
	var cases [][2]float64
	for a := -3.0; a <= 3; a += 0.25 {
		for z := -3.0; z <= 3; z += 0.25 {
			cases = append(cases, [2]float64{a, z})
		}
	}
	for _, z := range []float64{-2, -0.5, 0, 0.5, 1, 2.5} {
		cases = append(cases, [2]float64{-z, z}, [2]float64{-(math.Sqrt2 - 1) * z, z},
			[2]float64{-(math.Sqrt2-1)*z + 1e-3, z}, [2]float64{-(math.Sqrt2-1)*z - 1e-3, z})
	}
	for _, c := range cases {
		a, z := c[0], c[1]
		best, arg := math.Inf(1), 0.0
		for u := -8.0; u <= 8; u += 1e-3 {
			if v := h(u, a, z); v < best {
				best, arg = v, u
			}
		}
		u := UUpdate(a, z)
		if got := h(u, a, z); got > best+1e-9 {
			t.Fatalf("a=%v z=%v: UUpdate=%v has F=%v, the grid's minimiser %v has %v", a, z, u, got, arg, best)
		}
	}
}

// TestXUpdateMatchesNumericalMinimisation checks Eq. (11) (corrected) against gradient descent
// on ½‖x − r‖² + ½‖x W − t‖² (gonum/optimize pulls a module this one does not require).
func TestXUpdateMatchesNumericalMinimisation(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for _, sh := range [][2]int{{3, 2}, {4, 6}, {5, 1}} {
		nd, no := sh[0], sh[1]
		w := mat.NewDense(nd, no, nil)
		r := mat.NewDense(2, nd, nil)
		tt := mat.NewDense(2, no, nil)
		for _, m := range []*mat.Dense{w, r, tt} {
			m.Apply(func(_, _ int, _ float64) float64 { return rng.NormFloat64() }, m)
		}
		x, err := XUpdate(r, tt, w)
		if err != nil {
			t.Fatal(err)
		}
		for i := 0; i < 2; i++ {
			ri, ti := r.RawRowView(i), tt.RawRowView(i)
			f := func(v []float64) float64 {
				s := 0.0
				for j := range v {
					s += (v[j] - ri[j]) * (v[j] - ri[j]) / 2
				}
				for k := 0; k < no; k++ {
					p := -ti[k]
					for j := range v {
						p += v[j] * w.At(j, k)
					}
					s += p * p / 2
				}
				return s
			}
			res := struct {
				X []float64
				F float64
			}{X: make([]float64, nd)}
			step := 1 / (1 + math.Pow(mat.Norm(w, 2), 2))
			for it := 0; it < 20000; it++ {
				grad := make([]float64, nd)
				for j := range grad {
					grad[j] = res.X[j] - ri[j]
				}
				for k := 0; k < no; k++ {
					p := -ti[k]
					for j := range res.X {
						p += res.X[j] * w.At(j, k)
					}
					for j := range grad {
						grad[j] += p * w.At(j, k)
					}
				}
				for j := range res.X {
					res.X[j] -= step * grad[j]
				}
			}
			res.F = f(res.X)
			for j := 0; j < nd; j++ {
				if d := math.Abs(x.At(i, j) - res.X[j]); d > 1e-4 {
					t.Fatalf("%dx%d row %d coord %d: Cholesky %v, numerical %v", nd, no, i, j, x.At(i, j), res.X[j])
				}
			}
			if f(x.RawRowView(i)) > res.F+1e-12 {
				t.Fatalf("%dx%d row %d: closed form F=%v above numerical F=%v", nd, no, i, f(x.RawRowView(i)), res.F)
			}
		}
	}
}

// TestBlockGradientEqualsMaterialised checks the clipped per-example block-gradient sum against
// materialised, individually clipped gradients x_i(x_iW − t_i)ᵀ, each ≤ C, at several scales.
func TestBlockGradientEqualsMaterialised(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	const n, nIn, nOut = 7, 5, 3
	fill := func(k int, s float64) []float32 {
		v := make([]float32, k)
		for i := range v {
			v[i] = float32(s * rng.NormFloat64())
		}
		return v
	}
	for _, tc := range []struct {
		name        string
		scale, clip float64
	}{{"none clipped", 1, math.Inf(1)}, {"all clipped", 1, 1e-3}, {"some clipped", 1, 3}, {"large", 1e3, 10}, {"tiny", 1e-3, 1e-7}} {
		w, in, tg := fill(nIn*nOut, tc.scale), fill(n*nIn, tc.scale), fill(n*nOut, tc.scale)
		gw := make([]float32, nIn*nOut)
		clipped, _, err := BlockGradient(gw, w, in, tg, n, nIn, nOut, tc.clip, nil)
		if err != nil {
			t.Fatal(err)
		}
		want := make([]float64, nIn*nOut)
		wantClipped := 0
		for i := 0; i < n; i++ {
			g := make([]float64, nIn*nOut)
			res := make([]float64, nOut)
			for k := 0; k < nOut; k++ {
				res[k] = -float64(tg[i*nOut+k])
				for j := 0; j < nIn; j++ {
					res[k] += float64(in[i*nIn+j]) * float64(w[j*nOut+k])
				}
			}
			var sq float64
			for j := 0; j < nIn; j++ {
				for k := 0; k < nOut; k++ {
					g[j*nOut+k] = float64(in[i*nIn+j]) * res[k]
					sq += g[j*nOut+k] * g[j*nOut+k]
				}
			}
			c := math.Min(1, tc.clip/math.Sqrt(sq))
			if c < 1 {
				wantClipped++
			}
			if norm := c * math.Sqrt(sq); norm > tc.clip*(1+1e-6) {
				t.Fatalf("%s: example %d's clipped contribution has norm %v > C = %v", tc.name, i, norm, tc.clip)
			}
			for j := range g {
				want[j] += c * g[j]
			}
		}
		if clipped != wantClipped {
			t.Errorf("%s: %d clipped, want %d", tc.name, clipped, wantClipped)
		}
		var ref float64
		for _, v := range want {
			ref = math.Max(ref, math.Abs(v))
		}
		for j := range want {
			if d := math.Abs(float64(gw[j]) - want[j]); d > 1e-4*ref {
				t.Fatalf("%s: entry %d = %v, materialised %v", tc.name, j, gw[j], want[j])
			}
		}
	}
}

// TestBlockGradientNonFiniteIsClippedToZero: an example with a NaN or infinite input (or
// target) is clipped to zero and counted, not an error, and the sum is the sum over the other
// examples.
func TestBlockGradientNonFiniteIsClippedToZero(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 5))
	const n, nIn, nOut = 7, 5, 3
	fill := func(k int) []float32 {
		v := make([]float32, k)
		for i := range v {
			v[i] = float32(rng.NormFloat64())
		}
		return v
	}
	w := fill(nIn * nOut)
	for _, bad := range []float32{float32(math.NaN()), float32(math.Inf(-1))} {
		for _, inTarget := range []bool{false, true} {
			in, tg := fill(n*nIn), fill(n*nOut)
			if inTarget {
				tg[2*nOut+1] = bad
			} else {
				in[2*nIn+3] = bad
			}
			got, want := make([]float32, nIn*nOut), make([]float32, nIn*nOut)
			st, _, err := ClippedBlockGradient(got, w, in, tg, n, nIn, nOut, 1, nil)
			if err != nil || st.NonFinite != 1 || st.N != n {
				t.Fatalf("%v (target %v): %+v, err %v; want NonFinite 1 and no error", bad, inTarget, st, err)
			}
			in2 := append(slices.Clone(in[:2*nIn]), in[3*nIn:]...)
			tg2 := append(slices.Clone(tg[:2*nOut]), tg[3*nOut:]...)
			if _, _, err := BlockGradient(want, w, in2, tg2, n-1, nIn, nOut, 1, nil); err != nil {
				t.Fatal(err)
			}
			for j := range want {
				if d := math.Abs(float64(got[j] - want[j])); !(d <= 1e-6) {
					t.Fatalf("%v (target %v): entry %d = %v, want %v without the example", bad, inTarget, j, got[j], want[j])
				}
			}
		}
	}
}

// toy returns a small dataset and its lifted MLP.
func toy(t *testing.T, n int, sizes []int, rho []float64, recompute bool) (*MLP, [][]float32, data.Batch) {
	t.Helper()
	rng := rand.New(rand.NewPCG(5, 6))
	m, err := New(Config{Sizes: sizes, ActivationClip: rho, DatasetSize: n, Recompute: recompute})
	if err != nil {
		t.Fatal(err)
	}
	w := make([][]float32, m.Blocks())
	for d := range w {
		in, out := m.Shape(d)
		w[d] = make([]float32, in*out)
		for i := range w[d] {
			w[d][i] = float32(rng.NormFloat64() / math.Sqrt(float64(in)))
		}
	}
	b := data.Batch{N: n, X: make([]float32, n*sizes[0]), Y: make([]int32, n), Index: make([]int, n)}
	for i := 0; i < n; i++ {
		b.Index[i] = i
		b.Y[i] = int32(rng.IntN(sizes[len(sizes)-1]))
		for j := 0; j < sizes[0]; j++ {
			b.X[i*sizes[0]+j] = float32(rng.NormFloat64()) + float32(b.Y[i])
		}
	}
	return m, w, b
}

// TestNonPrivateBCDDecreasesF runs full-batch non-private MBCD (Algorithm 2: exact hidden
// updates, released blocks by gradient steps with η_d ≤ 1/β_d) and checks that F of Eq. (4)
// never increases and ends lower.
func TestNonPrivateBCDDecreasesF(t *testing.T) {
	inf := math.Inf(1)
	m, w, b := toy(t, 30, []int{4, 6, 5, 3}, []float64{inf, inf, inf}, false)
	f0, err := m.Objective(w, b)
	if err != nil {
		t.Fatal(err)
	}
	prev := f0
	for it := 0; it < 30; it++ {
		p, err := m.Update(w, b)
		if err != nil {
			t.Fatal(err)
		}
		fh, _ := m.Objective(w, b)
		if fh > prev*(1+1e-5) {
			t.Fatalf("iteration %d: hidden updates raised F from %v to %v", it, prev, fh)
		}
		for d := range w {
			in, out := m.Shape(d)
			gw := make([]float32, in*out)
			if _, _, err := BlockGradient(gw, w[d], p.In[d], p.Target[d], p.N, in, out, inf, nil); err != nil {
				t.Fatal(err)
			}
			var beta float64 // smoothness of ½Σ_i‖t_i − x_i W‖²: ‖XᵀX‖ ≤ Σ_i‖x_i‖²
			for _, v := range p.In[d] {
				beta += float64(v) * float64(v)
			}
			for i := range w[d] {
				w[d][i] -= float32(gw[i] / float32(beta))
			}
		}
		f, _ := m.Objective(w, b)
		if f > fh*(1+1e-5) {
			t.Fatalf("iteration %d: weight steps raised F from %v to %v", it, fh, f)
		}
		prev = f
	}
	if !(prev < 0.8*f0) {
		t.Fatalf("F went from %v to %v: BCD did not decrease it", f0, prev)
	}
}

// TestActivationClipAndState checks Eq. (12) on every returned block input, that the
// auxiliaries are kept per example (a second visit starts where the first ended) and that
// Recompute keeps nothing.
func TestActivationClipAndState(t *testing.T) {
	rho := []float64{0.5, 0.7, 0.9}
	for _, recompute := range []bool{false, true} {
		m, w, b := toy(t, 8, []int{4, 6, 5, 3}, rho, recompute)
		p1, err := m.Update(w, b)
		if err != nil {
			t.Fatal(err)
		}
		for d, x := range p1.In {
			in, _ := m.Shape(d)
			for i := 0; i < p1.N; i++ {
				var s float64
				for _, v := range x[i*in : (i+1)*in] {
					s += float64(v) * float64(v)
				}
				if math.Sqrt(s) > rho[d]*(1+1e-6) {
					t.Fatalf("recompute=%v: x_%d of example %d has norm %v > ρ = %v", recompute, d, i, math.Sqrt(s), rho[d])
				}
			}
		}
		p2, err := m.Update(w, b)
		if err != nil {
			t.Fatal(err)
		}
		same := true
		for j := range p1.Target[0] {
			same = same && p1.Target[0][j] == p2.Target[0][j]
		}
		if recompute != same {
			t.Errorf("recompute=%v: second visit's u_0 equal to the first's = %v (kept state should move on; recomputed should repeat)", recompute, same)
		}
	}
	m, w, b := toy(t, 4, []int{4, 3, 2}, []float64{1, 1}, false)
	b.Index = nil
	if _, err := m.Update(w, b); err == nil {
		t.Fatal("a batch without dataset indices gave no error")
	}
}
