package sgld

import (
	"math"
	"strings"
	"testing"

	"github.com/dptrain/dptrain/accounting"
)

// testRun is a run satisfying every checked assumption.
func testRun(n int, lip, lam, beta, diam float64) accounting.Run {
	return accounting.Run{
		LastIterateOnly: true, UpdateRule: "sgd", DatasetSize: n,
		Convexity: accounting.StronglyConvex, Lipschitz: lip, Smoothness: beta,
		StrongConvexity: lam, DomainDiameter: diam, HolderExponent: 1,
	}
}

func mustStep(t *testing.T, sigma, eta, lip float64, m, n int, s accounting.Sampling) accounting.Step {
	t.Helper()
	st, err := DeclareStep(sigma, eta, lip, m, n, s)
	if err != nil {
		t.Fatal(err)
	}
	return st
}

func relClose(got, want, tol float64) bool { return math.Abs(got-want) <= tol*math.Abs(want) }

// mironov is Proposition 2.1 minimised over real α for ε(α) = α·ρ, evaluated independently.
func mironov(rho, delta float64) float64 { return rho + 2*math.Sqrt(rho*math.Log(1/delta)) }

// cksScan is the Canonne–Kamath–Steinke conversion of ε(α) = α·ρ minimised by a dense scan.
func cksScan(rho, delta float64) float64 {
	best := math.Inf(1)
	for a := 1.0001; a < 1e6; a *= 1.0005 {
		e := a*rho + math.Log((a-1)/a) - (math.Log(delta)+math.Log(a))/(a-1)
		best = math.Min(best, e)
	}
	return best
}

// TestReadingVectors matches the reading's vectors V1–V3 (seed-001 §4.4), computed there in
// Python from the closed form of Theorem 3.1.
func TestReadingVectors(t *testing.T) {
	decreasing := func(k int) float64 { return DecreasingStepSize(10, 0.01, k) }
	tests := []struct {
		name                          string
		run                           accounting.Run
		sigma                         float64
		eta                           func(k int) float64
		steps                         int
		wantSum, wantRho, wantMironov float64
	}{
		{"V1 constant", testRun(1000, 1, 0.01, 10, 100), 0.1, func(int) float64 { return 0.05 }, 1000, 50, 0.008847968677, 0.6471770496},
		{"V2 decreasing", testRun(1000, 1, 0.01, 10, 100), 0.1, decreasing, 1000, 44.63371064, 0.00800080005, 0.6150020015},
		{"V3 CIFAR10 K=epochs", testRun(50000, 15, 0.001, 55, 100), 0.0022, func(int) float64 { return 0.018 }, 30, 0.54, 0.02007993372, 0.98170},
		{"V3 CIFAR10 K=steps", testRun(50000, 15, 0.001, 55, 100), 0.0022, func(int) float64 { return 0.018 }, 11730, 211.14, 7.452038392, 25.97713},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			a, err := New(tc.run)
			if err != nil {
				t.Fatal(err)
			}
			for k := 0; k < tc.steps; k++ {
				if err := a.Compose(mustStep(t, tc.sigma, tc.eta(k), tc.run.Lipschitz, 128, tc.run.DatasetSize, accounting.WithoutReplacement)); err != nil {
					t.Fatalf("step %d: %v", k, err)
				}
			}
			if !relClose(a.SumStepSize(), tc.wantSum, 1e-9) {
				t.Errorf("Σ η = %.10g, want %.10g", a.SumStepSize(), tc.wantSum)
			}
			if !relClose(a.Rho(), tc.wantRho, 1e-9) {
				t.Errorf("ρ = %.12g, want %.12g", a.Rho(), tc.wantRho)
			}
			r2, _ := a.RDP(2)
			if !relClose(r2, 2*tc.wantRho, 1e-9) {
				t.Errorf("RDP(2) = %.12g, want %.12g", r2, 2*tc.wantRho)
			}
			if m := mironov(a.Rho(), 1e-5); !relClose(m, tc.wantMironov, 1e-5) {
				t.Errorf("Mironov ε = %.8g, want %.8g", m, tc.wantMironov)
			}
			g, err := a.Epsilon(1e-5)
			if err != nil {
				t.Fatal(err)
			}
			want := math.Min(tc.wantMironov, cksScan(tc.wantRho, 1e-5))
			if g.Epsilon < want*(1-1e-4) || g.Epsilon > want*(1+1e-4) {
				t.Errorf("ε = %.8g, want min(Mironov, CKS) = %.8g", g.Epsilon, want)
			}
			if g.Epsilon > tc.wantMironov*(1+1e-12) {
				t.Errorf("ε = %v exceeds Mironov's %v", g.Epsilon, tc.wantMironov)
			}
			t.Logf("ρ = %.12g (want %.12g), Mironov ε = %.8g (want %.8g), ε = %.8g at α = %.4g", a.Rho(), tc.wantRho, mironov(a.Rho(), 1e-5), tc.wantMironov, g.Epsilon, g.Order)
			if g.Label != accounting.Paper {
				t.Errorf("label %q, want paper for minibatches", g.Label)
			}
		})
	}
}

// TestCorollaries compares the running sum with Corollary 3.2 and Corollary 3.3 evaluated by
// hand: ρ = ρ_∞(1 − e^{−ληK/2}) exactly, and ρ_∞·λK/(4β+λK) as the integral bound, which the
// exact sum exceeds by less than ρ_∞·(1 − e^{−λη_0/2}) (reading, A4).
func TestCorollaries(t *testing.T) {
	for _, tc := range []struct {
		L, lam, beta, sigma float64
		n, K                int
	}{
		{1, 0.01, 10, 0.1, 1000, 1000},
		{2, 0.1, 3, 0.05, 500, 77},
		{0.5, 0.001, 50, 0.01, 20000, 5000},
	} {
		run := testRun(tc.n, tc.L, tc.lam, tc.beta, 1)
		rhoInf := 4 * tc.L * tc.L / (tc.lam * float64(tc.n*tc.n) * tc.sigma * tc.sigma)

		fixed, _ := New(run)
		eta := 1 / (2 * tc.beta)
		st := mustStep(t, tc.sigma, eta, tc.L, 10, tc.n, accounting.WithoutReplacement)
		st.Count = tc.K
		if err := fixed.Compose(st); err != nil {
			t.Fatal(err)
		}
		want := rhoInf * (1 - math.Exp(-tc.lam*eta*float64(tc.K)/2))
		if !relClose(fixed.Rho(), want, 1e-9) {
			t.Errorf("%+v Cor 3.2: ρ = %v, want %v", tc, fixed.Rho(), want)
		}

		dec, _ := New(run)
		for k := 0; k < tc.K; k++ {
			if err := dec.Compose(mustStep(t, tc.sigma, DecreasingStepSize(tc.beta, tc.lam, k), tc.L, 10, tc.n, accounting.WithoutReplacement)); err != nil {
				t.Fatal(err)
			}
		}
		closed := rhoInf * tc.lam * float64(tc.K) / (4*tc.beta + tc.lam*float64(tc.K))
		gap := dec.Rho() - closed
		if gap < 0 || gap > rhoInf*(1-math.Exp(-tc.lam/(4*tc.beta))) {
			t.Errorf("%+v Cor 3.3: exact ρ %v vs closed form %v: gap %v outside [0, ρ_∞(1−e^{−λη_0/2})]", tc, dec.Rho(), closed, gap)
		}
	}
}

// TestRecursionEqualsClosedForm checks, for a mixed data-independent schedule, that the sum of
// step sizes gives the per-step recurrence ρ_{k+1} = a_k ρ_k + (1 − a_k) ρ_∞ (reading, §4.4).
func TestRecursionEqualsClosedForm(t *testing.T) {
	run := testRun(300, 1.5, 0.2, 4, 10)
	a, _ := New(run)
	sigma := 0.07
	rhoInf := 4 * 1.5 * 1.5 / (0.2 * 300 * 300 * sigma * sigma)
	rho := 0.0
	for k := 0; k < 400; k++ {
		eta := 0.2 / (1 + float64(k%7))
		st := mustStep(t, sigma, eta, 1.5, 30, 300, accounting.WithoutReplacement)
		if err := a.Compose(st); err != nil {
			t.Fatal(err)
		}
		d := math.Exp(-0.2 * eta / 2)
		rho = d*rho + (1-d)*rhoInf
		if !relClose(a.Rho(), rho, 1e-10) {
			t.Fatalf("step %d: ρ = %v, recurrence %v", k, a.Rho(), rho)
		}
	}
}

// TestConservative checks the per-batch variant: every-batch schemes give the paper's ρ times
// (n/m)², full batch equals the paper (and is certified), and the shuffled worst case matches a
// brute-force maximum over the position of i0 in every epoch.
func TestConservative(t *testing.T) {
	run := testRun(60, 1, 0.5, 2, 1)
	sigma, eta := 0.3, 0.25

	paper, _ := New(run)
	cons, _ := NewConservative(run)
	for k := 0; k < 50; k++ {
		_ = paper.Compose(mustStep(t, sigma, eta, 1, 20, 60, accounting.WithoutReplacement))
		if err := cons.Compose(mustStep(t, sigma, eta, 1, 20, 60, accounting.WithoutReplacement)); err != nil {
			t.Fatal(err)
		}
	}
	// Here the LSI bound (λS/2 = 3.125) is below composition 50·η/(m²σ²).
	if comp := 50 * eta / (400 * sigma * sigma); !relClose(cons.Rho(), math.Min(paper.Rho()*9, comp), 1e-12) || paper.Rho()*9 > comp {
		t.Errorf("without replacement: conservative ρ = %v, want 9 × paper %v < composition %v", cons.Rho(), paper.Rho()*9, comp)
	}
	if cons.Label() != accounting.Certified || paper.Label() != accounting.Paper {
		t.Errorf("labels %q, %q", cons.Label(), paper.Label())
	}

	fullP, _ := New(run)
	fullC, _ := NewConservative(run)
	st := mustStep(t, sigma, eta, 1, 60, 60, accounting.FullBatch)
	st.Count = 40
	if err := fullP.Compose(st); err != nil {
		t.Fatal(err)
	}
	_ = fullC.Compose(st)
	if !relClose(fullP.Rho(), fullC.Rho(), 1e-12) || fullP.Label() != accounting.Certified {
		t.Errorf("full batch: paper %v (%q) vs conservative %v", fullP.Rho(), fullP.Label(), fullC.Rho())
	}

	// Shuffled: n = 60, m = 20 → 3 batches per epoch; 4 epochs + 2 steps, varying η.
	shuf, _ := NewConservative(run)
	etas := []float64{0.3, 0.1, 0.2, 0.4, 0.05, 0.25, 0.3, 0.3, 0.1, 0.45, 0.2, 0.15, 0.35, 0.1}
	for k, e := range etas {
		s := mustStep(t, sigma, e, 1, 20, 60, accounting.Shuffled)
		s.BatchIndex = k % 3
		if err := shuf.Compose(s); err != nil {
			t.Fatal(err)
		}
	}
	// Brute force: i0's position in each of the 5 (partial last) epochs, or absent in the last.
	unit := 4.0 / (0.5 * sigma * sigma * 400) // 4L²/(λσ²m²)
	best := 0.0
	var rec func(epoch int, pos []int)
	rec = func(epoch int, pos []int) {
		if epoch == 5 {
			rho := 0.0
			for k, e := range etas {
				d := math.Exp(-0.5 * e / 2)
				rho *= d
				if pos[k/3] == k%3 {
					rho += (1 - d) * unit
				}
			}
			best = math.Max(best, rho)
			return
		}
		for p := -1; p < 3; p++ {
			rec(epoch+1, append(pos, p))
		}
	}
	rec(0, nil)
	// Composition of the worst sequence: each epoch's largest η, times L²/(m²σ²).
	comp := 0.0
	for e := 0; e < len(etas); e += 3 {
		m := 0.0
		for _, x := range etas[e:min(e+3, len(etas))] {
			m = math.Max(m, x)
		}
		comp += m / (400 * sigma * sigma)
	}
	if !relClose(shuf.Rho(), math.Min(best, comp), 1e-12) {
		t.Errorf("shuffled: ρ = %v, want min(brute-force worst case %v, composition %v)", shuf.Rho(), best, comp)
	}
	// One differing step per epoch is less than a differing step every time.
	every, _ := NewConservative(run)
	for _, e := range etas {
		_ = every.Compose(mustStep(t, sigma, e, 1, 20, 60, accounting.WithoutReplacement))
	}
	if shuf.Rho() >= every.Rho() {
		t.Errorf("shuffled ρ %v not below every-batch ρ %v", shuf.Rho(), every.Rho())
	}
}

// TestConservativeShortRun: with K ≪ β/λ composition is the smaller bound, and it equals the
// Gaussian-mechanism sum computed by hand: 1000 steps of η L²/(m²σ²) = 0.05/(10⁴·0.01) → ρ = 0.5.
func TestConservativeShortRun(t *testing.T) {
	a, _ := NewConservative(testRun(1000, 1, 0.01, 10, 100))
	st := mustStep(t, 0.1, 0.05, 1, 100, 1000, accounting.WithoutReplacement)
	st.Count = 1000
	if err := a.Compose(st); err != nil {
		t.Fatal(err)
	}
	lsi := 4 / (0.01 * 0.01 * 1e4) * (1 - math.Exp(-0.01*50/2))
	if !relClose(a.Rho(), 0.5, 1e-12) || !(lsi > 0.5) {
		t.Errorf("ρ = %v, want composition 0.5 (LSI bound %v)", a.Rho(), lsi)
	}
}

func TestRefusals(t *testing.T) {
	good := testRun(100, 1, 0.1, 2, 10)
	runs := []struct {
		name string
		edit func(*accounting.Run)
		want string
	}{
		{"intermediate released", func(r *accounting.Run) { r.LastIterateOnly = false }, "last iterate"},
		{"momentum", func(r *accounting.Run) { r.UpdateRule = "momentum" }, "update rule"},
		{"convex only", func(r *accounting.Run) { r.Convexity = accounting.Convex }, "strongly convex"},
		{"no lambda", func(r *accounting.Run) { r.StrongConvexity = 0 }, "λ"},
		{"beta < lambda", func(r *accounting.Run) { r.Smoothness = 0.01 }, "β"},
		{"holder", func(r *accounting.Run) { r.HolderExponent = 0.5 }, "Hölder"},
		{"no projection", func(r *accounting.Run) { r.DomainDiameter = 0 }, "diameter"},
		{"inconsistent L", func(r *accounting.Run) { r.DomainDiameter = 21 }, "inconsistent"},
		{"no n", func(r *accounting.Run) { r.DatasetSize = 0 }, "dataset size"},
	}
	for _, tc := range runs {
		r := good
		tc.edit(&r)
		if _, err := New(r); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: error %v, want one mentioning %q", tc.name, err, tc.want)
		}
	}

	base := mustStep(t, 0.1, 0.2, 1, 10, 100, accounting.WithoutReplacement)
	steps := []struct {
		name string
		edit func(*accounting.Step)
		want string
	}{
		{"eta too large", func(s *accounting.Step) { s.StepSize = 0.5 }, "1/β"},
		{"poisson", func(s *accounting.Step) { s.Sampling = accounting.Poisson }, "sampling"},
		{"shuffled in paper mode", func(s *accounting.Step) { s.Sampling = accounting.Shuffled }, "not covered"},
		{"add-remove", func(s *accounting.Step) { s.Neighbouring = accounting.AddRemove }, "replace-one"},
		{"active clipping", func(s *accounting.Step) { s.Sensitivity = 0.5; s.NoiseMultiplier = s.NoiseStd / 0.5 }, "clipped"},
		{"inconsistent noise", func(s *accounting.Step) { s.NoiseMultiplier *= 2 }, "disagrees"},
		{"other n", func(s *accounting.Step) { s.DatasetSize = 99 }, "dataset size"},
		{"sigma changes", func(s *accounting.Step) { s.NoiseStd *= 1.01; s.NoiseMultiplier *= 1.01 }, "σ changed"},
		{"mechanism", func(s *accounting.Step) { s.Mechanism = accounting.SampledWithRejectionGaussian }, "mechanism"},
	}
	for _, tc := range steps {
		a, _ := New(good)
		if err := a.Compose(base); err != nil {
			t.Fatal(err)
		}
		before := *a
		s := base
		tc.edit(&s)
		err := a.Compose(s)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: error %v, want one mentioning %q", tc.name, err, tc.want)
		}
		if *a != before {
			t.Errorf("%s: a refused step changed the accountant", tc.name)
		}
	}

	cons, _ := NewConservative(good)
	s := base
	s.Sampling, s.BatchIndex = accounting.Shuffled, 1
	if err := cons.Compose(s); err == nil || !strings.Contains(err.Error(), "batch index") {
		t.Errorf("misaligned shuffled batch: error %v", err)
	}
}

func TestEpsilonProperties(t *testing.T) {
	run := testRun(1000, 1, 0.01, 10, 100)
	a, _ := New(run)
	if g, err := a.Epsilon(1e-5); err != nil || g.Epsilon != 0 {
		t.Errorf("before any step: %+v, %v; want ε = 0", g, err)
	}
	prev := 0.0
	for k := 0; k < 200; k++ {
		_ = a.Compose(mustStep(t, 0.1, 0.05, 1, 100, 1000, accounting.WithoutReplacement))
		g, err := a.Epsilon(1e-5)
		if err != nil || math.IsNaN(g.Epsilon) || g.Epsilon < prev {
			t.Fatalf("step %d: ε %v after %v (err %v): want finite and non-decreasing", k, g.Epsilon, prev, err)
		}
		prev = g.Epsilon
	}
	lim, err := a.EpsilonLimit(1e-5)
	if err != nil || lim.Epsilon < prev {
		t.Errorf("limit ε %v < current %v (err %v)", lim.Epsilon, prev, err)
	}
	c := a.Clone().(*Accountant)
	_ = c.Compose(mustStep(t, 0.1, 0.05, 1, 100, 1000, accounting.WithoutReplacement))
	if a.Steps() != 200 || c.Steps() != 201 {
		t.Errorf("clone not independent: %d, %d steps", a.Steps(), c.Steps())
	}
	if _, err := a.Epsilon(0); err == nil {
		t.Error("δ = 0 accepted")
	}
	k := a.Constants()
	for _, name := range []string{"n", "batch_size", "steps", "sigma", "sum_step_size", "lipschitz", "smoothness", "strong_convexity", "diameter", "rho", "rho_inf"} {
		if _, ok := k[name]; !ok {
			t.Errorf("Constants() lacks %q", name)
		}
	}
	if !relClose(k["sigma"], 0.1, 1e-12) {
		t.Errorf("σ recovered as %v, want 0.1", k["sigma"])
	}
}

func TestSoftmaxRegression(t *testing.T) {
	// R = 1 with bias (R'² = 2), 10 classes, λ = 0.01: radius sqrt(2 ln 10 / 0.01) = 21.45966...
	run, err := SoftmaxRegression(1, 10, 0.01, true, 5000)
	if err != nil {
		t.Fatal(err)
	}
	if !relClose(run.Lipschitz, 2.2145966026289345, 1e-12) || !relClose(run.Smoothness, 1.01, 1e-12) ||
		!relClose(run.DomainDiameter, 42.919320525786944, 1e-12) || run.StrongConvexity != 0.01 {
		t.Errorf("constants %+v", run)
	}
	if _, err := New(run); err != nil {
		t.Errorf("helper run refused: %v", err)
	}
	if _, err := SoftmaxRegression(1, 1, 0.01, false, 10); err == nil {
		t.Error("1 class accepted")
	}
}

func TestRefusesBlockSteps(t *testing.T) {
	a, err := New(testRun(1000, 1, 0.1, 1, 10))
	if err != nil {
		t.Fatal(err)
	}
	s := mustStep(t, 0.1, 0.5, 1, 10, 1000, accounting.WithoutReplacement)
	s.Block = 1
	if err := a.Compose(s); err == nil || !strings.Contains(err.Error(), "block 1") {
		t.Errorf("a block-coordinate step was accepted (err = %v)", err)
	}
}
