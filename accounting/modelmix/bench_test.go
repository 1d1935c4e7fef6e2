package modelmix

import (
	"fmt"
	"testing"
)

// BenchmarkLiveStep is the per-step work of a live run after the first step: compose one
// (cached) step and read ε, as the trainer does after every step.
func BenchmarkLiveStep(b *testing.B) {
	for _, maxOrder := range []int{256, 1024} {
		b.Run(fmt.Sprintf("orders=%d", maxOrder), func(b *testing.B) {
			a, err := NewWithOptions(sgdRun, Options{MaxOrder: maxOrder})
			if err != nil {
				b.Fatal(err)
			}
			s := mmStep(0.02, 0.46751699958522286, 3.75, 1, 1)
			if err := a.Compose(s); err != nil {
				b.Fatal(err)
			}
			b.ResetTimer()
			for b.Loop() {
				if err := a.Compose(s); err != nil {
					b.Fatal(err)
				}
				if _, err := a.Epsilon(1e-5); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkCompose is Compose alone on a cached step.
func BenchmarkCompose(b *testing.B) {
	a, err := New(sgdRun)
	if err != nil {
		b.Fatal(err)
	}
	s := mmStep(0.02, 0.46751699958522286, 3.75, 1, 1)
	if err := a.Compose(s); err != nil {
		b.Fatal(err)
	}
	b.ResetTimer()
	for b.Loop() {
		if err := a.Compose(s); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkStepRDPUncached is the first (uncached) computation of a step's RDP curve: the
// integrals of §4.5 and the binomial sums, Fig. 3 parameters (Z = 0.4675, W = 3.75, q = 0.02).
func BenchmarkStepRDPUncached(b *testing.B) {
	for _, c := range []struct{ p, maxOrder int }{{1, 256}, {25, 256}, {100, 256}, {1, 1024}} {
		b.Run(fmt.Sprintf("p=%d/orders=%d", c.p, c.maxOrder), func(b *testing.B) {
			p := Params{SampleRate: 0.02, NoiseMultiplier: 0.46751699958522286, MixWidth: 3.75, LinfParts: c.p}
			for b.Loop() {
				if _, err := StepRDP(p, c.maxOrder); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkCalibrateNoise calibrates Z for the §5.2 CIFAR-10 setting (q = 0.03, T = 3500,
// W = 11.25, p = 100) to ε = 8.
func BenchmarkCalibrateNoise(b *testing.B) {
	for b.Loop() {
		if _, err := CalibrateNoise(8, 1e-5, 0.03, 3500, 11.25, 100); err != nil {
			b.Fatal(err)
		}
	}
}
