package dpulr

import (
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"gonum.org/v1/gonum/mat"
)

func ulrInputs(rng *rand.Rand, b, d int) (*mat.Dense, []float64) {
	a := mat.NewDense(b, d, nil)
	loss := make([]float64, b)
	for i := 0; i < b; i++ {
		for j := 0; j < d-1; j++ {
			a.Set(i, j, rng.NormFloat64())
		}
		a.Set(i, d-1, 1) // the bias column of ã = [a; 1]
		loss[i] = 0.2 + rng.Float64()*2
	}
	return a, loss
}

func minEigen(t *testing.T, m *mat.SymDense) float64 {
	t.Helper()
	var e mat.EigenSym
	if !e.Factorize(m, false) {
		t.Fatal("eigendecomposition failed")
	}
	v := e.Values(nil)
	return v[0]
}

// Kronecker identity (Feng et al., Eq. 26): λ_min(Σ_d L0² JᵀJ) over the dense layer's out·d
// parameters, built by brute force from the Jacobian of v = Θ ã, equals λ_min(M_l).
func TestULRKroneckerIdentity(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for _, c := range []struct{ b, d, out int }{{8, 4, 3}, {20, 6, 2}, {3, 5, 2}} {
		a, loss := ulrInputs(rng, c.b, c.d)
		n, err := ControlLayer(a, loss, Control{Copies: 4, ClipNorm: 1, NoiseMultiplier: 2, SigmaFloor: 1e-3})
		if err != nil {
			t.Fatal(err)
		}
		p := c.out * c.d
		sum := mat.NewSymDense(p, nil)
		for i := 0; i < c.b; i++ {
			j := mat.NewDense(c.out, p, nil) // ∂v_o/∂Θ_{o,k} = ã_k
			for o := 0; o < c.out; o++ {
				for k := 0; k < c.d; k++ {
					j.Set(o, o*c.d+k, a.At(i, k))
				}
			}
			var jtj mat.SymDense
			jtj.SymOuterK(loss[i]*loss[i], j.T())
			sum.AddSym(sum, &jtj)
		}
		brute := minEigen(t, sum)
		if math.Abs(brute-n.LambdaMin) > 1e-9*math.Max(1, brute) {
			t.Errorf("b=%d d=%d: brute-force λ_min = %v, controller's λ_min(M_l) = %v", c.b, c.d, brute, n.LambdaMin)
		}
		if c.b < c.d && n.LambdaMin != 0 {
			t.Errorf("b=%d < d=%d: λ_min = %v, want 0 (rank-deficient)", c.b, c.d, n.LambdaMin)
		}
	}
}

// Eq. 7 with equality, then the floor and the cap.
func TestULRSigmaEquation7(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	a, loss := ulrInputs(rng, 30, 5)
	var m mat.SymDense
	w := mat.DenseCopyOf(a)
	for i, l := range loss {
		r := w.RawRowView(i)
		for j := range r {
			r[j] *= l
		}
	}
	m.SymOuterK(1, w.T())
	lmin := minEigen(t, &m)
	const k, c, s0 = 4, 0.5, 2.0
	want := math.Sqrt(lmin / (k * c * c * s0 * s0))
	for _, tc := range []struct {
		name       string
		floor, cap float64
		want       float64
	}{
		{"equality", want / 10, 0, want},
		{"floor", want * 3, 0, want * 3},
		{"cap", want / 10, want / 2, want / 2},
	} {
		n, err := ControlLayer(a, loss, Control{Copies: k, ClipNorm: c, NoiseMultiplier: s0, SigmaFloor: tc.floor, SigmaCap: tc.cap})
		if err != nil {
			t.Fatal(err)
		}
		if math.Abs(n.Sigma-tc.want) > 1e-9*tc.want {
			t.Errorf("%s: σ_l = %v, want %v", tc.name, n.Sigma, tc.want)
		}
	}
}

// The top-up (§2.6): the estimator's covariance M_l/(Kσ²) plus the empirical covariance of the
// top-up rows has every eigenvalue ≥ σ0²C² (up to sampling error), with the primal and the
// b×b dual eigendecomposition, and with σ at its floor or capped.
func TestULRTopUpCovariance(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	const rows = 40000
	for _, c := range []struct {
		name       string
		b, d       int
		floor, cap float64
	}{{"primal", 40, 5, 1e-3, 0}, {"primal capped", 40, 5, 1e-3, 1e-2}, {"dual", 3, 6, 0.05, 0}} {
		a, loss := ulrInputs(rng, c.b, c.d)
		ctl := Control{Copies: 2, ClipNorm: 1.5, NoiseMultiplier: 1.2, SigmaFloor: c.floor, SigmaCap: c.cap}
		n, err := ControlLayer(a, loss, ctl)
		if err != nil {
			t.Fatal(err)
		}
		e := n.TopUp(rows, rng)
		var cov mat.SymDense
		cov.SymOuterK(1/float64(rows), e.T())
		w := mat.DenseCopyOf(a)
		for i, l := range loss {
			r := w.RawRowView(i)
			for j := range r {
				r[j] *= l
			}
		}
		var est mat.SymDense
		est.SymOuterK(1/(float64(ctl.Copies)*n.Sigma*n.Sigma), w.T())
		cov.AddSym(&cov, &est)
		target := ctl.NoiseMultiplier * ctl.NoiseMultiplier * ctl.ClipNorm * ctl.ClipNorm
		// Relative sampling error of a variance from 40000 draws is about √(2/40000) ≈ 0.7%.
		if got := minEigen(t, &cov); got < target*(1-0.04) {
			t.Errorf("%s: λ_min of the total covariance = %v, want ≥ σ0²C² = %v", c.name, got, target)
		}
	}
}

func TestULRControllerRefuses(t *testing.T) {
	a, loss := ulrInputs(rand.New(rand.NewPCG(7, 8)), 4, 3)
	ok := Control{Copies: 1, ClipNorm: 1, NoiseMultiplier: 1, SigmaFloor: 0.1}
	bad := append([]float64(nil), loss...)
	bad[2] = math.NaN()
	for _, c := range []struct {
		name string
		loss []float64
		ctl  Control
		want string
	}{
		{"non-finite loss", bad, ok, "example 2"},
		{"no copies", loss, Control{ClipNorm: 1, NoiseMultiplier: 1, SigmaFloor: 0.1}, "copies"},
		{"cap below floor", loss, Control{Copies: 1, ClipNorm: 1, NoiseMultiplier: 1, SigmaFloor: 0.1, SigmaCap: 0.01}, "cap"},
		{"loss count", loss[:2], ok, "clean losses"},
	} {
		if _, err := ControlLayer(a, c.loss, c.ctl); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: err = %v, want it to mention %q", c.name, err, c.want)
		}
	}
}
