package benchmarks

import (
	"math/rand/v2"
	"runtime"
	"sync"
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
	// dp marks the per-example GEMMs that only a DP step computes, plain those that only a
	// non-private step computes.
	dp, plain bool
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

// directBlock is models' directBlock: the direct executor runs each block of 32 samples'
// forward, backward and clipping GEMMs on one goroutine.
const directBlock = 32

// cnnDirectStepGemms are the BLAS calls of one cnn-tramer-boneh step on the direct executor
// (models/direct.go) at batch b: per block of 32 samples, the forward GEMMs, the input-gradient
// GEMMs, and the conv layers' weight gradients (a non-private step: one GEMM per block; a DP
// step: conv1's per-example products, kept and summed with their clip factors, and conv2's Gram
// SYRKs then one GEMM per block); per batch, the dense layers' weight gradients, dense1's in
// slices of 128 rows.
func cnnDirectStepGemms(b int) []gemmShape {
	nb := b / directBlock
	r1, r2 := directBlock*196, directBlock*25
	return []gemmShape{
		{name: "conv1-forward", m: r1, n: 16, k: 64, times: nb},
		{name: "conv2-forward", m: r2, n: 32, k: 256, times: nb},
		{name: "dense1-forward", m: directBlock, n: 32, k: 512, times: nb},
		{name: "dense2-forward", m: directBlock, n: 10, k: 32, times: nb},
		{name: "conv2-input-grad", m: r2, n: 256, k: 32, times: nb},
		{name: "dense1-input-grad", m: directBlock, n: 512, k: 32, times: nb},
		{name: "dense2-input-grad", m: directBlock, n: 32, k: 10, times: nb},
		{name: "conv1-per-example", m: 64, n: 16, k: 196, times: b, dp: true, transA: true},
		{name: "conv2-per-example-gram-p", m: 25, k: 256, times: b, dp: true, syrk: true},
		{name: "conv2-per-example-gram-g", m: 25, k: 32, times: b, dp: true, syrk: true},
		{name: "conv1-weight-grad-block", m: 64, n: 16, k: r1, times: nb, plain: true, transA: true},
		{name: "conv2-weight-grad-block", m: 256, n: 32, k: r2, times: nb, transA: true},
		{name: "dense1-weight-grad-slice", m: 128, n: 32, k: b, times: 4, transA: true},
		{name: "dense2-weight-grad", m: 32, n: 10, k: b, times: 1, transA: true},
	}
}

// BenchmarkSgemmCNNStepDirect is the GEMM floor of a direct-executor step: its BLAS calls
// (cnnDirectStepGemms) split evenly over GOMAXPROCS goroutines, each with its own operands, as
// the executor splits blocks, with single-threaded OpenBLAS. ms/step is the time a step would
// take if it did nothing but its GEMMs on all cores; the step's fraction of the machine's GEMM
// rate is this over the measured step.
func BenchmarkSgemmCNNStepDirect(b *testing.B) {
	shapes := cnnDirectStepGemms(benchBatch)
	workers := runtime.GOMAXPROCS(0)
	for _, step := range []struct {
		name string
		dp   bool
	}{{"plain", false}, {"dp", true}} {
		var flops float64
		runs := make([][]gemmRun, workers)
		for _, s := range shapes {
			if (s.dp && !step.dp) || (s.plain && step.dp) {
				continue
			}
			flops += s.flops()
			for w := range workers {
				share := s
				share.times = s.times*(w+1)/workers - s.times*w/workers
				runs[w] = append(runs[w], share.prepare(rand.New(rand.NewPCG(3, uint64(w)))))
			}
		}
		b.Run(step.name, func(b *testing.B) {
			for b.Loop() {
				var wg sync.WaitGroup
				for w := range workers {
					wg.Add(1)
					go func() {
						defer wg.Done()
						for _, r := range runs[w] {
							r()
						}
					}()
				}
				wg.Wait()
			}
			b.ReportMetric(flops/1e6, "MFLOP/step")
			b.ReportMetric(b.Elapsed().Seconds()*1e3/float64(b.N), "ms/step")
			b.ReportMetric(flops*float64(b.N)/b.Elapsed().Seconds()/1e9, "GFLOP/s")
		})
	}
}
