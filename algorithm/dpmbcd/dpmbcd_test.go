package dpmbcd

import (
	"math"
	"testing"

	"github.com/dptrain/dptrain/accounting"
	"github.com/dptrain/dptrain/accounting/mbcd"
	"github.com/dptrain/dptrain/algorithm/internal/steptest"
	"github.com/dptrain/dptrain/data"
	"github.com/dptrain/dptrain/models/lifted"
	"github.com/dptrain/dptrain/optim"
)

func newTestMBCD(t testing.TB, sizes []int, rho []float64, n int, cfg Config, seed uint64) (*Optimizer, *steptest.Zero) {
	t.Helper()
	lm, err := lifted.New(lifted.Config{Sizes: sizes, ActivationClip: rho, DatasetSize: n})
	if err != nil {
		t.Fatal(err)
	}
	cfg.Lifted = lm
	total := 0
	for d := 0; d < lm.Blocks(); d++ {
		in, out := lm.Shape(d)
		cfg.Offsets = append(cfg.Offsets, total)
		total += in * out
	}
	if cfg.Schedule == nil {
		cfg.Schedule = optim.Constant{Rate: 0.1}
	}
	o, err := New(cfg, optim.NewSeededNoise(seed))
	if err != nil {
		t.Fatal(err)
	}
	m := &steptest.Zero{Theta: make([]float32, total)}
	for i := range m.Theta {
		m.Theta[i] = float32(math.Sin(float64(i))) / 4
	}
	return o, m
}

func mbcdBatch(n0, b, j int, zero bool) data.Batch {
	bt := data.Batch{N: b, X: make([]float32, b*n0), Y: make([]int32, b), Index: make([]int, b)}
	for i := 0; i < b; i++ {
		bt.Index[i] = j*b + i
		bt.Y[i] = int32((j + i) % 2)
		for c := 0; c < n0 && !zero; c++ {
			bt.X[i*n0+c] = float32(math.Cos(float64(7*bt.Index[i] + c)))
		}
	}
	return bt
}

// TestDPMBCDRecordsReproduceTV1 feeds the records of 5 epochs of a one-block lifted model with
// ρ = 1 (β = 1, so the paper's L_F = 1 − ηβ = 0.9), η = 0.1, n = 40, b = 2, C = 0.5 (TV1's
// S_g = 1 = 2C under replace-one) and σ chosen so that o = 0.01 to the mbcd accountant, and checks the reading's TV1 ledger (§4.6). Each
// step's records equal what Declare announced.
func TestDPMBCDRecordsReproduceTV1(t *testing.T) {
	const n, b, eta, oTarget = 40, 2, 0.1, 0.01
	const clip = 0.5
	sigma := b * math.Sqrt(2*oTarget/eta) / clip // o = η·σ²C²/(2b²)
	o, m := newTestMBCD(t, []int{3, 2}, []float64{1}, n, Config{NoiseMultiplier: sigma, ClipNorm: clip, Schedule: optim.Constant{Rate: eta}}, 1)
	acc, err := mbcd.New(accounting.Run{LastIterateOnly: true, UpdateRule: o.UpdateRule(), DatasetSize: n,
		Convexity: accounting.Convex, SmoothnessPerRecord: true})
	if err != nil {
		t.Fatal(err)
	}
	for k := 0; k < 5*n/b; k++ {
		j := k % (n / b)
		info := steptest.Drawn(data.SchemeShuffledOnce, n, float64(b), 0, j)
		want, err := o.Declare(info)
		if err != nil {
			t.Fatal(err)
		}
		res, err := o.Step(m, mbcdBatch(3, b, j, false), info)
		if err != nil {
			t.Fatal(err)
		}
		if len(res.Records) != 1 || res.Records[0] != want[0] {
			t.Fatalf("step %d released %+v, declared %+v", k, res.Records, want)
		}
		if err := acc.Compose(res.Records[0]); err != nil {
			t.Fatal(err)
		}
	}
	tv1 := []float64{1.161699e-02, 1.434196e-02, 1.770612e-02, 2.185941e-02, 2.698693e-02, 3.331720e-02, 4.113234e-02,
		5.078067e-02, 6.269219e-02, 7.739776e-02, 9.555279e-02, 1.179664e-01, 1.456375e-01, 1.797994e-01,
		2.219746e-01, 2.740427e-01, 3.383244e-01, 4.176844e-01, 5.156598e-01, 6.366170e-01}
	got := acc.Ledger()
	for j := range tv1 {
		if math.Abs(got[j]-tv1[j]) > 1e-6*tv1[j] {
			t.Fatalf("e[%d] = %.7e, TV1 has %.7e", j, got[j], tv1[j])
		}
	}
}

// TestDPMBCDBlocksAndSchedules checks one record per released block with its id, batch index
// and β_d = ρ_d², that DeclareStep follows the noise control over epochs (std ∝ sqrt(o)),
// and that the certified accountant refuses a second block.
func TestDPMBCDBlocksAndSchedules(t *testing.T) {
	const n, b = 12, 3
	for _, tc := range []struct {
		name    string
		control NoiseControl
		factors []float64 // o(k)/o_ref for epochs 0..3
	}{
		{"constant", NoiseControl{}, []float64{1, 1, 1, 1}},
		{"linear", NoiseControl{Kind: "linear", Rate: 0.5, Epochs: 4}, []float64{2.5, 2, 1.5, 1}},
		{"piecewise", NoiseControl{Kind: "piecewise", From: []int{0, 2}, Factors: []float64{3, 1}}, []float64{3, 3, 1, 1}},
	} {
		o, _ := newTestMBCD(t, []int{4, 3, 2}, []float64{1, 0.5}, n, Config{NoiseMultiplier: 2, ClipNorm: 0.5, Control: tc.control}, 1)
		for k := 0; k < 16; k++ {
			info := steptest.Drawn(data.SchemeShuffledOnce, n, float64(b), 0, k%4)
			recs, err := o.DeclareStep(k, info)
			if err != nil {
				t.Fatal(err)
			}
			if len(recs) != 2 {
				t.Fatalf("%s: %d records, want one per block (2)", tc.name, len(recs))
			}
			for d, r := range recs {
				wantStd := 2 * 0.5 * math.Sqrt(tc.factors[k/4])
				if r.Block != d || r.BatchIndex != k%4 || r.Smoothness != []float64{1, 0.25}[d] || math.Abs(r.NoiseStd-wantStd) > 1e-12 {
					t.Fatalf("%s step %d block %d: record %+v, want std %v", tc.name, k, d, r, wantStd)
				}
			}
		}
	}
	o, _ := newTestMBCD(t, []int{4, 3, 2}, []float64{1, 1}, n, Config{NoiseMultiplier: 2, ClipNorm: 1}, 1)
	cert, err := mbcd.NewCertified(accounting.Run{LastIterateOnly: true, UpdateRule: "sgd", DatasetSize: n, Convexity: accounting.Convex, SmoothnessPerRecord: true})
	if err != nil {
		t.Fatal(err)
	}
	recs, _ := o.Declare(steptest.Drawn(data.SchemeShuffledOnce, n, float64(b), 0, 0))
	if err := cert.Compose(recs[0]); err != nil {
		t.Fatal(err)
	}
	if err := cert.Compose(recs[1]); err == nil {
		t.Fatal("the certified accountant accepted a second released block")
	}
	if _, err := New(Config{Lifted: o.cfg.Lifted, Offsets: o.cfg.Offsets, NoiseMultiplier: 1, ClipNorm: 1, Schedule: optim.Constant{Rate: 0.1},
		Control: NoiseControl{Kind: "piecewise", From: []int{1}, Factors: []float64{1}}}, optim.NewSeededNoise(1)); err == nil {
		t.Fatal("a piecewise schedule not starting at epoch 0 was accepted")
	}
}

// TestDPMBCDNoiseVariance checks Eq. (14)'s noise: with zero inputs every block gradient is 0,
// so a step moves each weight by pure noise of variance 2η·o (times the prox's 1/(1+ηλ)²).
func TestDPMBCDNoiseVariance(t *testing.T) {
	const n, b, eta, oRef, lambda = 8, 4, 0.05, 0.02, 2.0
	sigma := b * math.Sqrt(2*oRef/eta)
	o, m := newTestMBCD(t, []int{60, 50, 2}, []float64{1, 1}, n, Config{NoiseMultiplier: sigma, ClipNorm: 1, L2: lambda, Schedule: optim.Constant{Rate: eta}}, 7)
	before := append([]float32(nil), m.Theta...)
	if _, err := o.Step(m, mbcdBatch(60, b, 0, true), steptest.Drawn(data.SchemeShuffledOnce, n, float64(b), 0, 0)); err != nil {
		t.Fatal(err)
	}
	shrink := 1 / (1 + eta*lambda)
	var s2 float64
	for i, v := range m.Theta {
		d := float64(v) - float64(before[i])*shrink
		s2 += d * d
	}
	got := s2 / float64(len(m.Theta)) / (shrink * shrink)
	if want := 2 * eta * oRef; math.Abs(got-want) > 0.05*want {
		t.Fatalf("parameter noise variance %v, want 2η·o = %v", got, want)
	}
}

// TestDPMBCDImplicitOptimality checks the implicit W-update (Eq. 17 corrected, s = 1/b)
// without noise or clipping: W' satisfies (1/b)·Xᵀ(XW' − T) + (W' − W)/η = 0, the optimality
// condition of the proximal-point step min_W' f(W') + ‖W' − W‖²/(2η).
func TestDPMBCDImplicitOptimality(t *testing.T) {
	const n, b, n0, eta = 6, 6, 5, 0.7
	o, m := newTestMBCD(t, []int{n0, 2}, []float64{math.Inf(1)}, n, Config{ClipNorm: math.Inf(1), Implicit: true, Schedule: optim.Constant{Rate: eta}}, 1)
	w0 := append([]float32(nil), m.Theta...)
	bt := mbcdBatch(n0, b, 0, false)
	if _, err := o.Step(m, bt, steptest.Drawn(data.SchemeShuffledOnce, n, float64(b), 0, 0)); err != nil {
		t.Fatal(err)
	}
	var worst, scale float64
	for j := 0; j < n0; j++ {
		for k := 0; k < 2; k++ {
			var g float64 // (1/b)·Σ_i x_ij (x_i W' − t_i)_k
			for i := 0; i < b; i++ {
				r := 0.0
				if int(bt.Y[i]) == k {
					r = -1
				}
				for c := 0; c < n0; c++ {
					r += float64(bt.X[i*n0+c]) * float64(m.Theta[c*2+k])
				}
				g += float64(bt.X[i*n0+j]) * r / b
			}
			res := g + (float64(m.Theta[j*2+k])-float64(w0[j*2+k]))/eta
			worst, scale = math.Max(worst, math.Abs(res)), math.Max(scale, math.Abs(g))
		}
	}
	if worst > 1e-5*math.Max(scale, 1) {
		t.Fatalf("implicit step's optimality residual %v (gradient scale %v)", worst, scale)
	}
}

// TestDPMBCDSumIsMeanAtEtaB runs the summed W-update (w_reduction sum) at step size η and the
// mean one at η·b from the same weights, auxiliaries and noise seed for 3 epochs of a 2-block
// network, explicit and implicit, and checks that they release the same records and reach
// the same weights: bit-identical where η·b/b = η exactly in float64 (b = 4, η = 0.375), and
// within float32 rounding (relative 1e-6 of the weight scale) for b = 3, η = 0.1.
func TestDPMBCDSumIsMeanAtEtaB(t *testing.T) {
	for _, tc := range []struct {
		b     int
		eta   float64
		exact bool
	}{{4, 0.375, true}, {3, 0.1, false}} {
		for _, implicit := range []bool{false, true} {
			n := 4 * tc.b
			run := func(sum bool) ([]float32, [][]accounting.Step) {
				eta := tc.eta
				if !sum {
					eta *= float64(tc.b)
				}
				o, m := newTestMBCD(t, []int{5, 4, 2}, []float64{1, 1}, n, Config{NoiseMultiplier: 0.3, ClipNorm: 0.5, Implicit: implicit, Sum: sum,
					Schedule: optim.Constant{Rate: eta}}, 11)
				var recs [][]accounting.Step
				for k := 0; k < 3*n/tc.b; k++ {
					j := k % (n / tc.b)
					res, err := o.Step(m, mbcdBatch(5, tc.b, j, false), steptest.Drawn(data.SchemeShuffledOnce, n, float64(tc.b), 0, j))
					if err != nil {
						t.Fatal(err)
					}
					recs = append(recs, res.Records)
				}
				return m.Theta, recs
			}
			ws, rs := run(true)
			wm, rm := run(false)
			for k := range rs {
				for d := range rs[k] {
					if rs[k][d] != rm[k][d] {
						t.Fatalf("b %d implicit %v step %d block %d: sum at η declares %+v, mean at η·b %+v", tc.b, implicit, k, d, rs[k][d], rm[k][d])
					}
				}
			}
			var worst, scale float64
			for i := range ws {
				worst = math.Max(worst, math.Abs(float64(ws[i])-float64(wm[i])))
				scale = math.Max(scale, math.Abs(float64(wm[i])))
			}
			if tc.exact && worst != 0 || worst > 1e-6*scale {
				t.Fatalf("b %d implicit %v: sum at η and mean at η·b differ by %v (weight scale %v)", tc.b, implicit, worst, scale)
			}
		}
	}
}

// TestDPMBCDSumAccountsTrueSensitivity feeds one summed step (η, noise std σC on the sum) to
// the mbcd accountant: the parameter noise is N(0, (η·σC)²) and one replaced example moves the
// update by η·S_g = 2ηC, so the differing step's increment is the Gaussian mechanism's
// (2ηC)²/(2(ησC)²) = 2/σ², b² times what the mean's sensitivity η·S_g/b gives at the same
// parameter noise (Theorem 4.6's η·S_g²/(4b²·o) with o = η·σ²C²/2).
func TestDPMBCDSumAccountsTrueSensitivity(t *testing.T) {
	const n, b, eta, sigma, clip = 20, 5, 0.1, 0.5, 1.0
	o, _ := newTestMBCD(t, []int{3, 2}, []float64{1}, n, Config{NoiseMultiplier: sigma, ClipNorm: clip, Sum: true, Schedule: optim.Constant{Rate: eta}}, 1)
	acc, err := mbcd.New(accounting.Run{LastIterateOnly: true, UpdateRule: "sgd", DatasetSize: n, Convexity: accounting.Convex, SmoothnessPerRecord: true})
	if err != nil {
		t.Fatal(err)
	}
	recs, err := o.Declare(steptest.Drawn(data.SchemeShuffledOnce, n, b, 0, 2))
	if err != nil {
		t.Fatal(err)
	}
	if err := acc.Compose(recs[0]); err != nil {
		t.Fatal(err)
	}
	got := acc.Ledger()[2]
	oParam := eta * sigma * sigma * clip * clip / 2 // parameter noise variance (η·σC)² = 2η·o
	paperDelta := eta * (2 * clip) * (2 * clip) / (4 * b * b * oParam)
	if want := 2 / (sigma * sigma); math.Abs(got-want) > 1e-12*want || math.Abs(got-b*b*paperDelta) > 1e-12*want {
		t.Fatalf("summed step's increment %v, want 2/σ² = %v = b²·(the mean's) %v", got, want, b*b*paperDelta)
	}
	if c := acc.Constants(); c["lf_max"] != math.Abs(1-eta*b*1) {
		t.Fatalf("summed step's L_F %v, want |1 − η·b·β| = %v", c["lf_max"], math.Abs(1-eta*b))
	}
}

// BenchmarkDPMBCDStep times one DP-MBCD step (hidden updates, clipped block gradients, noise)
// at the auxiliaries' steady state (every example of the batch visited before) on the
// Madelon network of configs/madelon-dpmbcd.yaml and a 784-256-10 MLP.
func BenchmarkDPMBCDStep(b *testing.B) {
	for _, bc := range []struct {
		name  string
		sizes []int
		batch int
	}{{"madelon-20-200-200-200-5-b960", []int{20, 200, 200, 200, 5}, 960}, {"784-256-10-b256", []int{784, 256, 10}, 256}} {
		b.Run(bc.name, func(b *testing.B) {
			rho := make([]float64, len(bc.sizes)-1)
			for d := range rho {
				rho[d] = 1
			}
			n := 2 * bc.batch
			o, m := newTestMBCD(b, bc.sizes, rho, n, Config{NoiseMultiplier: 1, ClipNorm: 1, Schedule: optim.Constant{Rate: 0.05}}, 1)
			bt := mbcdBatch(bc.sizes[0], bc.batch, 0, false)
			info := steptest.Drawn(data.SchemeShuffledOnce, n, float64(bc.batch), 0, 0)
			if _, err := o.Step(m, bt, info); err != nil { // first visit: the forward pass
				b.Fatal(err)
			}
			b.ResetTimer()
			for range b.N {
				if _, err := o.Step(m, bt, info); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
