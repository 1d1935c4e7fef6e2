package convergent

import (
	"testing"

	"github.com/dptrain/dptrain/accounting"
)

// figure1Run is the paper's Figure-1 setting (App. A.13): n = 5, D = 1, L = 1, m = 1, K = 2.
func figure1Run(conv accounting.Convexity) accounting.Run {
	return accounting.Run{LastIterateOnly: true, UpdateRule: "sgd", DatasetSize: 5, Convexity: conv,
		Lipschitz: 2, Smoothness: 1, StrongConvexity: 1, DomainDiameter: 1}
}

// noisyStep declares a projected noisy SGD step adding N(0, σ²) to the parameters after a
// step of size η on a batch of b examples: NoiseStd = σ·b/η on the summed gradient.
func noisyStep(sampling accounting.Sampling, sigma, eta float64, b, n, count int) accounting.Step {
	std := sigma * float64(b) / eta
	return accounting.Step{Mechanism: accounting.Gaussian, Sampling: sampling, Neighbouring: accounting.ReplaceOne,
		NoiseMultiplier: std / 2, Sensitivity: 2, NoiseStd: std, SampleRate: float64(b) / float64(n),
		StepSize: eta, BatchSize: b, DatasetSize: n, Count: count}
}

func mustCompose(t *testing.T, a accounting.Accountant, s accounting.Step) {
	t.Helper()
	if err := a.Compose(s); err != nil {
		t.Fatal(err)
	}
}
