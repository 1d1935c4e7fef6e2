package convergent

import (
	"testing"

	"github.com/dptrain/dptrain/accounting"
)

// benchLive composes one step and asks for ε after each, as the live multiplexer does.
func benchLive(b *testing.B, a accounting.Accountant, s accounting.Step) {
	b.Helper()
	for b.Loop() {
		if err := a.Compose(s); err != nil {
			b.Fatal(err)
		}
		if _, err := a.Epsilon(1e-5); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkFullBatchConvexLive: logistic regression, n = 60000, D = 10, K = 1, L = 0.25,
// η = 1, noise multiplier 1 (σ = η·K/n).
func BenchmarkFullBatchConvexLive(b *testing.B) {
	run := accounting.Run{LastIterateOnly: true, UpdateRule: "sgd", DatasetSize: 60000, Convexity: accounting.Convex,
		Lipschitz: 1, Smoothness: 0.25, DomainDiameter: 10}
	a, _ := NewFullBatch(run, Options{})
	s := noisyStep(accounting.FullBatch, 1.0/60000, 1, 60000, 60000, 1)
	s.Sensitivity, s.NoiseMultiplier = 1, s.NoiseStd
	benchLive(b, a, s)
}

// BenchmarkFullBatchNonConvexLive: L = 10, η = 0.1, n = 1000, D = 10.
func BenchmarkFullBatchNonConvexLive(b *testing.B) {
	run := accounting.Run{LastIterateOnly: true, UpdateRule: "sgd", DatasetSize: 1000, Convexity: accounting.NonConvex,
		Lipschitz: 1, Smoothness: 10, DomainDiameter: 10}
	a, _ := NewFullBatch(run, Options{})
	benchLive(b, a, noisyStep(accounting.FullBatch, 1e-3, 0.1, 1000, 1000, 1))
}

// BenchmarkSubsampledLive: Theorem 3.12, convex, n = 60000, b = 256, 14 orders, grid 320.
func BenchmarkSubsampledLive(b *testing.B) {
	run := accounting.Run{LastIterateOnly: true, UpdateRule: "sgd", DatasetSize: 60000, Convexity: accounting.Convex,
		Lipschitz: 1, Smoothness: 0.25, DomainDiameter: 10}
	a, _ := NewSubsampled(run, Options{})
	s := noisyStep(accounting.WithoutReplacement, 0.5/256, 0.5, 256, 60000, 1)
	s.Sensitivity, s.NoiseMultiplier = 1, s.NoiseStd
	benchLive(b, a, s)
}

// BenchmarkCyclicLive: Theorem A.1, convex, n = 60000, b = 256 (234 batches per epoch).
func BenchmarkCyclicLive(b *testing.B) {
	run := accounting.Run{LastIterateOnly: true, UpdateRule: "sgd", DatasetSize: 59904, Convexity: accounting.Convex,
		Lipschitz: 1, Smoothness: 0.25, DomainDiameter: 10}
	a, _ := NewCyclic(run)
	s := noisyStep(accounting.Shuffled, 0.5/256, 0.5, 256, 59904, 1)
	s.Sensitivity, s.NoiseMultiplier = 1, s.NoiseStd
	benchLive(b, a, s)
}
