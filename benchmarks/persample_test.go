package benchmarks

import (
	"math"
	"math/rand/v2"
	"runtime"
	"testing"

	"github.com/dptrain/dptrain/data"
	"github.com/dptrain/dptrain/models"
	"github.com/dptrain/dptrain/models/graph"
	"github.com/dptrain/dptrain/optim"
)

// Issue 4's per-sample gradient targets: a DP-SGD step (ClippedGradSum with a finite clip
// norm, ghost clipping) against a non-private step (ClippedGradSum with clip = +Inf, the same
// graph without norms) at batch 256: at most 1.5× for a 784-512-10 MLP and 2.0× for the
// Tramèr & Boneh MNIST CNN. Run with
//
//	go test -run '^$' -bench 'Step' -benchmem ./benchmarks/
//	go test -tags openblas -run '^$' -bench 'Step' -benchmem ./benchmarks/
//
// Each sub-benchmark also reports peak-heap-MB: the largest heap in use, sampled after every
// step, which bounds the step's working set (graph buffers are allocated once and reused).

const benchBatch = 256

func benchStep(b *testing.B, spec models.Spec) {
	for _, bc := range []struct {
		name string
		clip float64
	}{{"sgd", math.Inf(1)}, {"dpsgd", 1.0}} {
		b.Run(bc.name, func(b *testing.B) {
			rng := rand.New(rand.NewPCG(1, 2))
			m, err := graph.New(spec, rng)
			if err != nil {
				b.Fatal(err)
			}
			d := 1
			for _, s := range m.InputShape() {
				d *= s
			}
			batch := data.Batch{X: make([]float32, benchBatch*d), Y: make([]int32, benchBatch), N: benchBatch}
			for i := range batch.X {
				batch.X[i] = float32(rng.Float64())
			}
			for i := range batch.Y {
				batch.Y[i] = int32(rng.IntN(m.Classes()))
			}
			grad := make([]float32, len(m.Params()))
			var norms []float64
			if !math.IsInf(bc.clip, 1) {
				norms = make([]float64, benchBatch)
			}
			// One warm-up step compiles the graph.
			if _, err := m.ClippedGradSum(batch, bc.clip, grad, norms); err != nil {
				b.Fatal(err)
			}
			runtime.GC()
			var ms runtime.MemStats
			var peak uint64
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				if _, err := m.ClippedGradSum(batch, bc.clip, grad, norms); err != nil {
					b.Fatal(err)
				}
				b.StopTimer()
				runtime.ReadMemStats(&ms)
				peak = max(peak, ms.HeapAlloc)
				b.StartTimer()
			}
			b.ReportMetric(float64(peak)/(1<<20), "peak-heap-MB")
		})
	}
}

// BenchmarkStepMLP is one step of a 784-512-10 ReLU MLP on a batch of 256.
func BenchmarkStepMLP(b *testing.B) {
	benchStep(b, models.Spec{Kind: "mlp", Input: []int{784}, Classes: 10, Hidden: []int{512}, Activation: "relu"})
}

// BenchmarkStepCNN is one step of cnn-tramer-boneh on a batch of 256.
func BenchmarkStepCNN(b *testing.B) {
	benchStep(b, models.Spec{Kind: "cnn-tramer-boneh"})
}

// BenchmarkPerSampleCNN is PerSampleGradSum on cnn-tramer-boneh at batch 256 with ModelMix's
// l2–l∞ clipping (Algorithm 2, p = 100) applied to every materialised gradient, on each engine:
// the per-sample path of configs/fmnist-cnn-modelmix.yaml.
func BenchmarkPerSampleCNN(b *testing.B) {
	for _, engine := range []string{"direct", "graph"} {
		b.Run(engine, func(b *testing.B) {
			rng := rand.New(rand.NewPCG(1, 2))
			m, err := graph.New(models.Spec{Kind: "cnn-tramer-boneh", Engine: engine}, rng)
			if err != nil {
				b.Fatal(err)
			}
			batch := data.Batch{X: make([]float32, benchBatch*784), Y: make([]int32, benchBatch), N: benchBatch}
			for i := range batch.X {
				batch.X[i] = float32(rng.NormFloat64())
			}
			for i := range batch.Y {
				batch.Y[i] = int32(rng.IntN(m.Classes()))
			}
			grad := make([]float32, len(m.Params()))
			clip := func(_ int, g []float32) {
				if _, err := optim.ClipL2Linf(g, 1, 100); err != nil {
					panic(err)
				}
			}
			for b.Loop() {
				if _, err := m.PerSampleGradSum(batch, clip, grad); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
