package benchmarks

import (
	"math/rand/v2"
	"testing"

	"gonum.org/v1/gonum/blas"
	"gonum.org/v1/gonum/blas/blas32"

	_ "github.com/dptrain/dptrain/models" // routes blas32 to OpenBLAS under the openblas tag
)

// The GEMMs of one cnn-tramer-boneh DP-SGD step at batch 256, at the machine's own SGEMM rate:
// the time they would take if the step did nothing else. A step's fraction of the GEMM rate is
// this time over the measured step (dptrain bench throughput --model cnn --batch 256). Run with
//
//	go test -tags openblas -run '^$' -bench 'SgemmCNNStep' ./benchmarks/
//
// Shapes, from models' cnn-tramer-boneh preset on 1×28×28 inputs (b = 256):
//   - conv1, 16 filters 8×8, stride 2, padding 3: 14×14 outputs; patches P1 (b·196)×64.
//   - max pool 2×2 stride 1: 13×13×16.
//   - conv2, 32 filters 4×4, stride 2: 5×5 outputs; patches P2 (b·25)×256.
//   - max pool 2×2 stride 1: 4×4×32 = 512 features; dense 512→32, dense 32→10.
//
// Forward: P1·W1, P2·W2, dense1, dense2. Backward to the inputs of every layer but the first:
// G2·W2ᵀ (then col2im), dense1 and dense2. Ghost clipping's per-example squared norms (dense
// layers use ‖a‖²‖g‖², no BLAS): conv1 materialises P1ᵢᵀG1ᵢ (64×16 from 196 rows), conv2 takes
// the Gram route, P2ᵢP2ᵢᵀ and G2ᵢG2ᵢᵀ by SYRK (25×25 from 256 and 32 columns), as
// models.SquaredNorms chooses; then one weighted sum Pᵀ·diag(c)·G per layer, which is the DP
// step's weight gradient. A non-private step has the same GEMMs without the per-example ones.
type gemmShape struct {
	name    string
	m, n, k int
	// times is how many times the GEMM runs per step (per-example GEMMs: once per example).
	times int
	// dp marks the per-example GEMMs that only a DP step computes.
	dp bool
	// transA: A is stored k×m and used transposed (weight gradients PᵀG).
	transA bool
	// syrk: C = A·Aᵀ (m×m, upper triangle) from A m×k; n is unused.
	syrk bool
}

func cnnStepGemms(b int) []gemmShape {
	return []gemmShape{
		{name: "conv1-forward", m: b * 196, n: 16, k: 64, times: 1},
		{name: "conv2-forward", m: b * 25, n: 32, k: 256, times: 1},
		{name: "dense1-forward", m: b, n: 32, k: 512, times: 1},
		{name: "dense2-forward", m: b, n: 10, k: 32, times: 1},
		{name: "conv2-input-grad", m: b * 25, n: 256, k: 32, times: 1},
		{name: "dense1-input-grad", m: b, n: 512, k: 32, times: 1},
		{name: "dense2-input-grad", m: b, n: 32, k: 10, times: 1},
		{name: "conv1-per-example", m: 64, n: 16, k: 196, times: b, dp: true, transA: true},
		{name: "conv2-per-example-gram-p", m: 25, k: 256, times: b, dp: true, syrk: true},
		{name: "conv2-per-example-gram-g", m: 25, k: 32, times: b, dp: true, syrk: true},
		{name: "conv1-weight-grad", m: 64, n: 16, k: b * 196, times: 1, transA: true},
		{name: "conv2-weight-grad", m: 256, n: 32, k: b * 25, times: 1, transA: true},
		{name: "dense1-weight-grad", m: 512, n: 32, k: b, times: 1, transA: true},
		{name: "dense2-weight-grad", m: 32, n: 10, k: b, times: 1, transA: true},
	}
}

func randGeneral(rng *rand.Rand, r, c int) blas32.General {
	d := make([]float32, r*c)
	for i := range d {
		d[i] = rng.Float32() - 0.5
	}
	return blas32.General{Rows: r, Cols: c, Stride: c, Data: d}
}

// run performs the shape's GEMMs once (all times of them), on operands allocated by prepare.
type gemmRun func()

func (s gemmShape) prepare(rng *rand.Rand) gemmRun {
	if s.syrk {
		a := randGeneral(rng, s.m, s.k)
		c := blas32.Symmetric{Uplo: blas.Upper, N: s.m, Stride: s.m, Data: make([]float32, s.m*s.m)}
		return func() {
			for range s.times {
				blas32.Syrk(blas.NoTrans, 1, a, 0, c)
			}
		}
	}
	ta := blas.NoTrans
	a := randGeneral(rng, s.m, s.k)
	if s.transA {
		ta = blas.Trans
		a = randGeneral(rng, s.k, s.m)
	}
	bm := randGeneral(rng, s.k, s.n)
	c := randGeneral(rng, s.m, s.n)
	return func() {
		for range s.times {
			blas32.Gemm(ta, blas.NoTrans, 1, a, bm, 0, c)
		}
	}
}

// flops counts a multiply-add as two; a SYRK computes the upper triangle and diagonal only.
func (s gemmShape) flops() float64 {
	if s.syrk {
		return float64(s.m) * float64(s.m+1) * float64(s.k) * float64(s.times)
	}
	return 2 * float64(s.m) * float64(s.n) * float64(s.k) * float64(s.times)
}

// BenchmarkSgemmCNNStep times each GEMM shape of a cnn-tramer-boneh step (GFLOP/s), then all of
// a plain step's and all of a DP step's together (ms per step of pure GEMM, and MFLOP per step).
func BenchmarkSgemmCNNStep(b *testing.B) {
	rng := rand.New(rand.NewPCG(3, 4))
	shapes := cnnStepGemms(benchBatch)
	for _, s := range shapes {
		run := s.prepare(rng)
		b.Run(s.name, func(b *testing.B) {
			for b.Loop() {
				run()
			}
			b.ReportMetric(s.flops()*float64(b.N)/b.Elapsed().Seconds()/1e9, "GFLOP/s")
		})
	}
	for _, step := range []struct {
		name string
		dp   bool
	}{{"step-plain", false}, {"step-dp", true}} {
		var runs []gemmRun
		var flops float64
		for _, s := range shapes {
			if s.dp && !step.dp {
				continue
			}
			runs = append(runs, s.prepare(rng))
			flops += s.flops()
		}
		b.Run(step.name, func(b *testing.B) {
			for b.Loop() {
				for _, r := range runs {
					r()
				}
			}
			b.ReportMetric(flops/1e6, "MFLOP/step")
			b.ReportMetric(b.Elapsed().Seconds()*1e3/float64(b.N), "ms/step")
			b.ReportMetric(flops*float64(b.N)/b.Elapsed().Seconds()/1e9, "GFLOP/s")
		})
	}
}
