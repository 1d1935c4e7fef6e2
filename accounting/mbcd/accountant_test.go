package mbcd

import (
	"math"
	"strings"
	"testing"

	"github.com/dptrain/dptrain/accounting"
)

func convexRun(n int, beta, lam float64) accounting.Run {
	r := accounting.Run{LastIterateOnly: true, UpdateRule: "sgd", DatasetSize: n,
		Convexity: accounting.Convex, Smoothness: beta, StrongConvexity: lam, HolderExponent: 1}
	if lam > 0 {
		r.Convexity = accounting.StronglyConvex
	}
	return r
}

// stepFor declares a step with S_g = 2C = sg and noise variance 2η·o on the parameters.
func stepFor(n, b, j int, eta, sg, o float64, s accounting.Sampling) accounting.Step {
	std := float64(b) * math.Sqrt(2*o/eta)
	return accounting.Step{Mechanism: accounting.Gaussian, Sampling: s, Neighbouring: accounting.ReplaceOne,
		NoiseMultiplier: std / (sg / 2), SampleRate: float64(b) / float64(n), Sensitivity: sg / 2,
		NoiseStd: std, StepSize: eta, BatchSize: b, DatasetSize: n, BatchIndex: j}
}

type vector struct {
	n, b, K int
	eta, lf float64
	lt      float64
	o       func(k, j int) float64
}

func (v vector) run(t *testing.T, opts Options, run accounting.Run) *Accountant {
	t.Helper()
	a, err := NewWithOptions(run, opts)
	if err != nil {
		t.Fatal(err)
	}
	N := v.n / v.b
	for s := 0; s < N*v.K; s++ {
		k, j := s/N, s%N
		if err := a.Compose(stepFor(v.n, v.b, j, v.eta, 1, v.o(k, j), accounting.ShuffledOnce)); err != nil {
			t.Fatalf("step %d: %v", s, err)
		}
	}
	return a
}

func (v vector) paper(t *testing.T) *Accountant {
	return v.run(t, Options{GradientLipschitz: v.lf, ProxLipschitz: v.lt}, convexRun(v.n, 0, 0))
}

func constO(x float64) func(int, int) float64 { return func(int, int) float64 { return x } }

func near(got, want, tol float64) bool { return math.Abs(got-want) <= tol*math.Abs(want) }

// TestReferenceVectors matches the reading's §4.6 vectors (a Python reference of the §3.6
// recursion, checked there against the corrected Theorem 4.6 closed form). Values printed with
// 7 significant digits are compared at 1e-6, ε (4–5 digits) at 5e-4.
func TestReferenceVectors(t *testing.T) {
	type want struct {
		e                        map[int]float64
		rdp2, rdp10, max2, max10 float64
		eps                      float64
	}
	tv1e := []float64{1.161699e-02, 1.434196e-02, 1.770612e-02, 2.185941e-02, 2.698693e-02, 3.331720e-02, 4.113234e-02,
		5.078067e-02, 6.269219e-02, 7.739776e-02, 9.555279e-02, 1.179664e-01, 1.456375e-01, 1.797994e-01,
		2.219746e-01, 2.740427e-01, 3.383244e-01, 4.176844e-01, 5.156598e-01, 6.366170e-01}
	asMap := func(xs []float64) map[int]float64 {
		m := map[int]float64{}
		for i, x := range xs {
			m[i] = x
		}
		return m
	}
	tests := []struct {
		name string
		v    vector
		w    want
	}{
		{"TV1", vector{40, 2, 5, 0.1, 0.9, 1, constO(0.01)},
			want{asMap(tv1e), 4.033892e-01, 6.033313e+00, 1.273234e+00, 6.366170e+00, 4.6686}},
		{"TV2", vector{2500, 100, 20, 0.05, 0.98, 1, constO(0.001)},
			want{map[int]float64{0: 7.634836e-04, 24: 2.013484e-03}, 2.586610e-03, 1.299471e-02, 0, 2.013484e-02, 0.20081}},
		{"TV3", vector{4800, 960, 40, 0.05, 0.95, 1, constO(0.005)},
			want{asMap([]float64{5.346856e-06, 5.924494e-06, 6.564537e-06, 7.273725e-06, 8.059529e-06}), 1.326766e-05, 6.633870e-05, 0, 0, 0.01033}},
		{"TV4", vector{90, 10, 30, 0.05, 0.95, 0.9, func(k, _ int) float64 { return 0.001 * (1 + 0.5*float64(k%3)) }},
			want{asMap([]float64{2.331907e-03, 3.697564e-03, 5.732696e-03, 8.754188e-03, 1.322899e-02, 1.984490e-02, 2.961477e-02, 4.403002e-02, 6.528663e-02}),
				4.360682e-02, 4.319289e-01, 0, 0, 1.3233}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			a := tc.v.paper(t)
			e := a.Ledger()
			for j, x := range tc.w.e {
				if !near(e[j], x, 1e-6) {
					t.Errorf("e[%d] = %.7e, want %.7e", j, e[j], x)
				}
			}
			check := func(name string, f func(float64) (float64, error), alpha, want float64) {
				if want == 0 {
					return
				}
				got, err := f(alpha)
				if err != nil || !near(got, want, 1e-6) {
					t.Errorf("%s(%v) = %.7e (err %v), want %.7e", name, alpha, got, err, want)
				}
			}
			check("RDP", a.RDP, 2, tc.w.rdp2)
			check("RDP", a.RDP, 10, tc.w.rdp10)
			check("RDPMax", a.RDPMax, 2, tc.w.max2)
			check("RDPMax", a.RDPMax, 10, tc.w.max10)
			g, err := a.Epsilon(1e-5)
			if err != nil {
				t.Fatal(err)
			}
			t.Logf("ε(δ=1e-5) = %.6g at α = %.4g (reading: CKS %.5g)", g.Epsilon, g.Order, tc.w.eps)
			if !near(g.Epsilon, tc.w.eps, 5e-4) || g.Label != accounting.Paper {
				t.Errorf("ε = %.6g (%s), want %.5g (paper)", g.Epsilon, g.Label, tc.w.eps)
			}
		})
	}
}

// TestLSIConstants checks Lemma C.3 by hand: 1/c_1 = 2ηL_T²o, 1/c_2 = (L_F L_T)²/c_1 + 2ηL_T²o_1,
// and TV1's 1/c_T = 2η·o·(1 − L^{2T})/(1 − L²) summed as a geometric series.
func TestLSIConstants(t *testing.T) {
	for _, tc := range []struct {
		v          vector
		c1, c2, cT float64
	}{
		{vector{40, 2, 5, 0.1, 0.9, 1, constO(0.01)}, 2e-3, 3.62e-3, 0.2 * 0.01 * (1 - math.Pow(0.81, 100)) / (1 - 0.81)},
		{vector{90, 10, 30, 0.05, 0.95, 0.9, func(k, _ int) float64 { return 0.001 * (1 + 0.5*float64(k%3)) }}, 8.1e-5, 1.402130e-4, 0},
	} {
		a, _ := NewWithOptions(convexRun(tc.v.n, 0, 0), Options{GradientLipschitz: tc.v.lf, ProxLipschitz: tc.v.lt})
		N := tc.v.n / tc.v.b
		for s := 0; s < N*tc.v.K; s++ {
			_ = a.Compose(stepFor(tc.v.n, tc.v.b, s%N, tc.v.eta, 1, tc.v.o(s/N, s%N), accounting.ShuffledOnce))
			got := a.LSIInverse(0)
			switch {
			case s == 0 && !near(got, tc.c1, 1e-9):
				t.Errorf("1/c_1 = %v, want %v", got, tc.c1)
			case s == 1 && !near(got, tc.c2, 1e-6):
				t.Errorf("1/c_2 = %v, want %v", got, tc.c2)
			case s == N*tc.v.K-1 && tc.cT > 0 && !near(got, tc.cT, 1e-9):
				t.Errorf("1/c_T = %v, want %v (reading: 1.052632e-02)", got, tc.cT)
			}
		}
	}
}

// closedForm evaluates the corrected Theorem 4.6 (reading, §3.5) for constant η, L_F, L_T:
//
//	e(j0) = Σ_k Δ_k·(c_{t_k+1}/c_T · L^{−2m_k} · Π_{l=k+1}^{K−1} c_{lN+j0+1}/c_{lN+j0})^{−1/L_T²}
//
// with 1/c_t = 2ηL_T² Σ_{t'<t} o_{t'} L^{2(t−t'−1)} summed directly.
func closedForm(n, b, K int, eta, sg, lf, lt float64, o func(k, j int) float64) []float64 {
	N, T := n/b, K*(n/b)
	L := lf * lt
	invc := func(t int) float64 {
		s := 0.0
		for tp := 0; tp < t; tp++ {
			s += o(tp/N, tp%N) * math.Pow(L, 2*float64(t-tp-1))
		}
		return 2 * eta * lt * lt * s
	}
	e := make([]float64, N)
	for j0 := 0; j0 < N; j0++ {
		for k := 0; k < K; k++ {
			tk := k*N + j0
			delta := eta * sg * sg / (4 * float64(b*b) * o(k, j0))
			m := float64((K-k)*(N-1) - j0)
			// c_a/c_b = invc(b)/invc(a).
			br := invc(T) / invc(tk+1) * math.Pow(L, -2*m)
			for l := k + 1; l < K; l++ {
				br *= invc(l*N+j0) / invc(l*N+j0+1)
			}
			e[j0] += delta * math.Pow(br, -1/(lt*lt))
		}
	}
	return e
}

func TestRecursionEqualsTheorem46(t *testing.T) {
	wobble := func(k, j int) float64 { return 0.002 * (1 + 0.3*math.Sin(float64(3*k+j))) }
	for _, v := range []vector{
		{24, 4, 6, 0.05, 0.93, 1, wobble},
		{24, 4, 6, 0.05, 0.93, 0.85, wobble},
		{50, 10, 9, 0.2, 0.8, 1, constO(0.01)},
	} {
		got := v.paper(t).Ledger()
		want := closedForm(v.n, v.b, v.K, v.eta, 1, v.lf, v.lt, v.o)
		for j := range want {
			if !near(got[j], want[j], 1e-10) {
				t.Errorf("%+v: e[%d] recursion %.15g, Theorem 4.6 %.15g", v, j, got[j], want[j])
			}
		}
	}
}

// TestInvariances: doubling o halves every e[j0], doubling η doubles it, and for constant noise
// with L_T = 1 the worst batch saturates at Δ/(1 − L_F^{2(N−1)}) (reading, §3.7).
func TestInvariances(t *testing.T) {
	v := vector{4800, 960, 40, 0.05, 0.95, 1, constO(0.005)}
	base := v.paper(t).Ledger()
	v2 := v
	v2.o = constO(0.01)
	half := v2.paper(t).Ledger()
	v3 := v
	v3.eta = 0.1
	dbl := v3.paper(t).Ledger()
	for j := range base {
		if !near(half[j], base[j]/2, 1e-12) || !near(dbl[j], 2*base[j], 1e-12) {
			t.Errorf("e[%d] = %v: o×2 gives %v, η×2 gives %v", j, base[j], half[j], dbl[j])
		}
	}
	long := v
	long.K = 400
	delta := 0.05 / (4 * 960 * 960 * 0.005)
	if sat, got := delta/(1-math.Pow(0.95, 8)), long.paper(t).Ledger()[4]; !near(got, sat, 1e-12) {
		t.Errorf("saturated e[N−1] = %v, want Δ/(1−L_F^{2(N−1)}) = %v (reading: 8.0595e-6)", got, sat)
	}
}

// TestCertifiedAgainstGaussian runs a one-dimensional quadratic block where everything is
// Gaussian: F(θ) = L_F·θ + drift, T(θ) = L_T·θ, noise variance s = 2ηo. The two runs differ
// only in the mean, μ, so R_α/α = μ²/(2v) exactly. The certified ledger must bound it for
// every j0; the paper's exponent −1/L_T² falls below it when L_T < 1.
func TestCertifiedAgainstGaussian(t *testing.T) {
	const n, b, K, eta, o, lt = 5, 1, 7, 0.1, 0.02, 0.8
	lam := 3.0 // λ = β: L_F = 1 − ηλ = 0.7
	N := n / b
	a, err := NewWithOptions(convexRun(n, lam, lam), Options{Variant: Certified, ProxLipschitz: lt})
	if err != nil {
		t.Fatal(err)
	}
	p, _ := NewWithOptions(convexRun(n, lam, 0), Options{GradientLipschitz: 1 - eta*lam, ProxLipschitz: lt})
	for s := 0; s < N*K; s++ {
		if err := a.Compose(stepFor(n, b, s%N, eta, 1, o, accounting.ShuffledOnce)); err != nil {
			t.Fatal(err)
		}
		_ = p.Compose(stepFor(n, b, s%N, eta, 1, o, accounting.ShuffledOnce))
	}
	lf, d, sv := 1-eta*lam, eta*1/float64(b), 2*eta*o
	paperBelow := false
	for j0, e := range a.Ledger() {
		mu, v := 0.0, 0.0
		for s := 0; s < N*K; s++ {
			mu = lf * mu
			if s%N == j0 {
				mu += d
			}
			mu, v = lt*mu, lt*lt*(lf*lf*v+sv)
		}
		exact := mu * mu / (2 * v)
		if e < exact*(1-1e-12) {
			t.Errorf("j0 = %d: certified bound %v below the exact R_α/α %v", j0, e, exact)
		}
		if p.Ledger()[j0] < exact {
			paperBelow = true
		}
	}
	if !paperBelow {
		t.Error("expected the paper's exponent −1/L_T² to under-report for L_T < 1 in this example")
	}
}

// TestReshuffledWorstCase compares the O(1) dynamic programme with a brute-force maximum over
// the position of the differing example in every epoch (or none in the last, partial one).
func TestReshuffledWorstCase(t *testing.T) {
	const n, b = 9, 3
	etas := []float64{0.1, 0.3, 0.2, 0.1, 0.1, 0.25, 0.05, 0.2, 0.3, 0.15, 0.1}
	os := []float64{0.01, 0.02, 0.01, 0.03, 0.01, 0.01, 0.02, 0.02, 0.01, 0.04, 0.01}
	a, _ := NewWithOptions(convexRun(n, 1, 0), Options{GradientLipschitz: 0.9})
	for s := range etas {
		if err := a.Compose(stepFor(n, b, s%3, etas[s], 1, os[s], accounting.Shuffled)); err != nil {
			t.Fatal(err)
		}
	}
	best := 0.0
	var rec func(pos []int)
	rec = func(pos []int) {
		if len(pos) == 4 {
			e, invc := 0.0, 0.0
			for s := range etas {
				f := 0.0
				if invc > 0 {
					f = 1 / (1 + 2*etas[s]*os[s]/(0.81*invc))
				}
				if pos[s/3] == s%3 {
					e += etas[s] / (4 * 9 * os[s])
				} else {
					e *= f
				}
				invc = 0.81*invc + 2*etas[s]*os[s]
			}
			best = math.Max(best, e)
			return
		}
		for p := -1; p < 3; p++ {
			rec(append(pos, p))
		}
	}
	rec(nil)
	got, _ := a.RDP(2)
	if !near(got, 2*best, 1e-12) {
		t.Errorf("reshuffled RDP(2) = %v, brute-force worst case %v", got, 2*best)
	}
}

func TestRemainderAndComposition(t *testing.T) {
	// n = 10, b = 3: 3 batches, 1 example never used; weights 0.3 each and 0.1 at zero loss.
	a, _ := NewWithOptions(convexRun(10, 1, 0), Options{GradientLipschitz: 0.9})
	for s := 0; s < 6; s++ {
		_ = a.Compose(stepFor(10, 3, s%3, 0.1, 1, 0.01, accounting.ShuffledOnce))
	}
	e := a.Ledger()
	alpha := 3.0
	want := math.Log(0.1+0.3*(math.Exp(2*3*e[0])+math.Exp(2*3*e[1])+math.Exp(2*3*e[2]))) / 2
	if got, _ := a.RDP(alpha); !near(got, want, 1e-12) {
		t.Errorf("RDP(3) = %v, want %v", got, want)
	}
	// Two blocks: ledgers add before the mixture.
	two, _ := NewWithOptions(convexRun(10, 1, 0), Options{GradientLipschitz: 0.9})
	for s := 0; s < 6; s++ {
		for blk := 0; blk < 2; blk++ {
			st := stepFor(10, 3, s%3, 0.1, 1, 0.01, accounting.ShuffledOnce)
			st.Block = blk
			_ = two.Compose(st)
		}
	}
	for j, x := range two.Ledger() {
		if !near(x, 2*e[j], 1e-12) {
			t.Errorf("two identical blocks: E[%d] = %v, want %v", j, x, 2*e[j])
		}
	}
	// Fresh subsets: plain composition α·ΣΔ.
	w, _ := NewWithOptions(convexRun(10, 1, 0), Options{GradientLipschitz: 0.9})
	st := stepFor(10, 3, 0, 0.1, 1, 0.01, accounting.WithoutReplacement)
	st.Count = 6
	_ = w.Compose(st)
	if got, _ := w.RDP(2); !near(got, 2*6*0.1/(4*9*0.01), 1e-12) {
		t.Errorf("without replacement RDP(2) = %v, want %v", got, 2*6*0.1/(4*9*0.01))
	}
}

func TestRefusals(t *testing.T) {
	good := convexRun(10, 1, 0)
	runs := []struct {
		name string
		run  accounting.Run
		opts Options
		want string
	}{
		{"intermediate released", func() accounting.Run { r := good; r.LastIterateOnly = false; return r }(), Options{}, "last iterate"},
		{"adam", func() accounting.Run { r := good; r.UpdateRule = "adam"; return r }(), Options{}, "update rule"},
		{"non-convex", func() accounting.Run { r := good; r.Convexity = accounting.NonConvex; return r }(), Options{}, "convex"},
		{"no beta", func() accounting.Run { r := good; r.Smoothness = 0; return r }(), Options{Variant: Certified}, "smoothness"},
		{"user LF certified", good, Options{Variant: Certified, GradientLipschitz: 0.5}, "certified"},
	}
	for _, tc := range runs {
		if _, err := NewWithOptions(tc.run, tc.opts); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: error %v, want one mentioning %q", tc.name, err, tc.want)
		}
	}
	steps := []struct {
		name string
		edit func(*accounting.Step)
		want string
	}{
		{"poisson", func(s *accounting.Step) { s.Sampling = accounting.Poisson }, "sampling"},
		{"add-remove", func(s *accounting.Step) { s.Neighbouring = accounting.AddRemove }, "replace-one"},
		{"batch index", func(s *accounting.Step) { s.BatchIndex = 3 }, "batch index"},
		{"batch size change", func(s *accounting.Step) { s.BatchSize = 2; s.SampleRate = 0.2 }, "partition"},
		{"second block", func(s *accounting.Step) { s.Block = 1 }, "one released block"},
		{"no clip", func(s *accounting.Step) { s.Sensitivity = 0 }, "sensitivity"},
		{"no step size", func(s *accounting.Step) { s.StepSize = 0 }, "step size"},
	}
	for _, tc := range steps {
		a, _ := NewCertified(good)
		if err := a.Compose(stepFor(10, 3, 0, 0.1, 1, 0.01, accounting.ShuffledOnce)); err != nil {
			t.Fatal(err)
		}
		before := a.Clone().(*Accountant)
		s := stepFor(10, 3, 1, 0.1, 1, 0.01, accounting.ShuffledOnce)
		tc.edit(&s)
		if err := a.Compose(s); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: error %v, want one mentioning %q", tc.name, err, tc.want)
		}
		if a.Steps() != before.Steps() || a.Ledger()[0] != before.Ledger()[0] || a.LSIInverse(0) != before.LSIInverse(0) {
			t.Errorf("%s: a refused step changed the accountant", tc.name)
		}
	}
}

func TestEpsilonAndClone(t *testing.T) {
	a, _ := NewCertified(convexRun(100, 1, 0.5))
	if g, err := a.Epsilon(1e-5); err != nil || g.Epsilon != 0 {
		t.Errorf("before any step: %+v %v", g, err)
	}
	prev := 0.0
	for s := 0; s < 60; s++ {
		if err := a.Compose(stepFor(100, 10, s%10, 0.1, 1, 0.01, accounting.ShuffledOnce)); err != nil {
			t.Fatal(err)
		}
		g, err := a.Epsilon(1e-5)
		if err != nil || math.IsNaN(g.Epsilon) || g.Epsilon < prev*(1-1e-9) || g.Label != accounting.Certified {
			t.Fatalf("step %d: %+v after %v, err %v", s, g, prev, err)
		}
		prev = g.Epsilon
	}
	c := a.Clone().(*Accountant)
	_ = c.Compose(stepFor(100, 10, 0, 0.1, 1, 0.01, accounting.ShuffledOnce))
	if c.Ledger()[0] == a.Ledger()[0] || a.Steps() != 60 {
		t.Error("clone shares its ledger")
	}
	k := a.Constants()
	for _, name := range []string{"n", "batch_size", "steps", "step_size_max", "noise_control_min", "sensitivity_sg", "lf_max", "lt", "lsi_inv_last"} {
		if _, ok := k[name]; !ok {
			t.Errorf("Constants() lacks %q", name)
		}
	}
	if !near(k["lf_max"], 0.95, 1e-12) {
		t.Errorf("certified L_F = %v, want max(|1−0.1·0.5|, |1−0.1·1|) = 0.95", k["lf_max"])
	}
}
