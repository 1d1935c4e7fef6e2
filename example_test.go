package dptrain_test

import (
	"context"
	"fmt"
	"log"
	"math"
	"math/rand/v2"

	"github.com/dptrain/dptrain"
	"github.com/dptrain/dptrain/accounting"
	"github.com/dptrain/dptrain/accounting/modes"
	"github.com/dptrain/dptrain/algorithm/modelmix"
	"github.com/dptrain/dptrain/data"
	"github.com/dptrain/dptrain/models"
	"github.com/dptrain/dptrain/optim"
)

// twoBlobs returns n examples of a two-class problem in two dimensions: class c is a unit
// Gaussian around (±1.5, ±1.5). It stands for a user's own in-memory data.
func twoBlobs(n int, seed uint64) (x []float32, y []int32) {
	rng := rand.New(rand.NewPCG(seed, 0))
	x, y = make([]float32, 2*n), make([]int32, n)
	for i := range n {
		c := int32(i % 2)
		m := float32(3*c) - 1.5
		x[2*i] = m + float32(rng.NormFloat64())
		x[2*i+1] = m + float32(rng.NormFloat64())
		y[i] = c
	}
	return x, y
}

// accuracy is the fraction of examples that net classifies correctly.
func accuracy(net *models.Network, x []float32, y []int32) float64 {
	st, err := net.Evaluate(data.Batch{X: x, Y: y, N: len(y)})
	if err != nil {
		log.Fatal(err)
	}
	return float64(st.Correct) / float64(st.N)
}

// ε of a run described by its records alone: DP-SGD with Poisson sampling at q = 256/60000,
// σ = 1.1, for 60 epochs, under the RDP accountant at δ = 1e-5 (the TensorFlow Privacy
// tutorial's MNIST case).
func Example_epsilonOfARun() {
	q := 256.0 / 60000
	steps := int(math.Ceil(60 / q))
	acct, err := modes.New("rdp", accounting.Run{DatasetSize: 60000, UpdateRule: "sgd"})
	if err != nil {
		log.Fatal(err)
	}
	err = acct.Compose(accounting.Step{Mechanism: accounting.Gaussian, Sampling: accounting.Poisson,
		Neighbouring: accounting.AddRemove, NoiseMultiplier: 1.1, SampleRate: q, Count: steps, DatasetSize: 60000})
	if err != nil {
		log.Fatal(err)
	}
	g, err := acct.Epsilon(1e-5)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Printf("%d steps: ε = %.2f (%s, rdp) at δ = 1e-5\n", steps, g.Epsilon, g.Label)
	// Output:
	// 14063 steps: ε = 2.60 (certified, rdp) at δ = 1e-5
}

// The same run under two certified accountants: the RDP bound and the tighter privacy loss
// distribution (PLD) numerical composition.
func Example_compareAccountants() {
	step := accounting.Step{Mechanism: accounting.Gaussian, Sampling: accounting.Poisson,
		Neighbouring: accounting.AddRemove, NoiseMultiplier: 1, SampleRate: 0.01, Count: 1000, DatasetSize: 10000}
	for _, name := range []string{"rdp", "pld"} {
		acct, err := modes.New(name, accounting.Run{DatasetSize: 10000, UpdateRule: "sgd"})
		if err != nil {
			log.Fatal(err)
		}
		if err := acct.Compose(step); err != nil {
			log.Fatal(err)
		}
		g, err := acct.Epsilon(1e-5)
		if err != nil {
			log.Fatal(err)
		}
		fmt.Printf("%s: ε = %.2f (%s)\n", name, g.Epsilon, g.Label)
	}
	// Output:
	// rdp: ε = 2.10 (certified)
	// pld: ε = 1.83 (certified)
}

// A private training loop on in-memory data: softmax regression on a two-class problem,
// DP-SGD with Poisson sampling, held to ε ≤ 2 at δ = 1e-5: the session stops before the step that would exceed it. The seed makes the output
// reproducible, and the run NOT private (anyone who knows the seed knows the noise): leave
// Config.Seed nil for a run you release.
func ExampleMakePrivate() {
	x, y := twoBlobs(2000, 1)
	net, err := models.New(models.Spec{Kind: "logreg", Input: []int{2}, Classes: 2}, rand.New(rand.NewPCG(2, 0)))
	if err != nil {
		log.Fatal(err)
	}
	seed := uint64(3)
	sess, err := dptrain.MakePrivate(net, x, y, dptrain.Config{
		BatchSize: 100, ClipNorm: 1, NoiseMultiplier: 1.2, LearningRate: 0.5, Epochs: 5,
		Delta: 1e-5, TargetEpsilon: 2, Seed: &seed,
	})
	if err != nil {
		log.Fatal(err)
	}
	if err := sess.Run(context.Background(), nil); err != nil {
		log.Fatal(err)
	}
	eps, err := sess.CertifiedEpsilon()
	if err != nil {
		log.Fatal(err)
	}
	fmt.Printf("%d of %d planned steps, ε = %.2f ≤ 2 (certified), private: %v\n", sess.Steps(), sess.PlannedSteps(), eps, sess.Private())
	fmt.Printf("accuracy %.2f\n", accuracy(net, x, y))
	// Output:
	// 40 of 100 planned steps, ε = 2.00 ≤ 2 (certified), private: false
	// accuracy 0.98
}

// MakePrivateWithEpsilon calibrates σ for a target ε over the planned steps, with the
// certified stopping accountant. Seeded, so reproducible and NOT private.
func ExampleMakePrivateWithEpsilon() {
	x, y := twoBlobs(2000, 1)
	net, err := models.New(models.Spec{Kind: "mlp", Input: []int{2}, Classes: 2, Hidden: []int{8}, Activation: "tanh"}, rand.New(rand.NewPCG(2, 0)))
	if err != nil {
		log.Fatal(err)
	}
	seed := uint64(4)
	sess, err := dptrain.MakePrivateWithEpsilon(net, x, y, dptrain.Config{
		BatchSize: 100, ClipNorm: 1, LearningRate: 0.5, Epochs: 5,
		Delta: 1e-5, TargetEpsilon: 2, Accountants: []string{"rdp", "pld"}, Seed: &seed,
	})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Printf("σ = %.3f for ε ≤ 2 over %d steps\n", sess.NoiseMultiplier(), sess.PlannedSteps())
	if err := sess.Run(context.Background(), nil); err != nil {
		log.Fatal(err)
	}
	for _, g := range sess.Epsilon() {
		if g.Err != nil { // this accountant's theorem does not cover the run: no number
			fmt.Printf("%s: %v\n", g.Accountant, g.Err)
			continue
		}
		fmt.Printf("%s: ε = %.2f (%s)\n", g.Accountant, g.Epsilon, g.Label)
	}
	fmt.Printf("accuracy %.2f\n", accuracy(net, x, y))
	// Output:
	// σ = 1.445 for ε ≤ 2 over 100 steps
	// rdp: ε = 2.00 (certified)
	// pld: ε = 1.78 (certified)
	// accuracy 0.98
}

// linreg is a user's own model: least-squares linear regression of the targets ±1 (from the
// class labels) on the features, with per-example gradient clipping. Implementing
// optim.GradientOracle is all a Session needs.
type linreg struct{ w []float32 } // weights, then the bias

func (m *linreg) Params() []float32 { return m.w }

// grad writes example i's gradient of ½(w·x + b − t)² into g and returns its loss.
func (m *linreg) grad(b data.Batch, i int, g []float32) float64 {
	d := len(m.w) - 1
	x := b.X[i*d : (i+1)*d]
	r := float64(m.w[d])
	for j, v := range x {
		r += float64(m.w[j]) * float64(v)
	}
	r -= float64(2*b.Y[i] - 1)
	for j, v := range x {
		g[j] = float32(r * float64(v))
	}
	g[d] = float32(r)
	return r * r / 2
}

func (m *linreg) ClippedGradSum(b data.Batch, clip float64, grad []float32, norms []float64) (data.Stats, error) {
	clear(grad)
	g := make([]float32, len(m.w))
	st := data.Stats{N: b.N}
	for i := range b.N {
		st.Loss += m.grad(b, i, g)
		var ss float64
		for _, v := range g {
			ss += float64(v) * float64(v)
		}
		norm := math.Sqrt(ss)
		if norms != nil {
			norms[i] = norm
		}
		scale := 1.0
		if norm > clip {
			scale, st.Clipped = clip/norm, st.Clipped+1
		}
		for j, v := range g {
			grad[j] += float32(scale * float64(v))
		}
	}
	return st, nil
}

func (m *linreg) PerSampleGradSum(b data.Batch, f func(i int, g []float32), grad []float32) (data.Stats, error) {
	clear(grad)
	g := make([]float32, len(m.w))
	st := data.Stats{N: b.N}
	for i := range b.N {
		st.Loss += m.grad(b, i, g)
		f(i, g)
		for j, v := range g {
			grad[j] += v
		}
	}
	return st, nil
}

// A custom model driven by the Session. Seeded, so reproducible and NOT private.
func Example_customModel() {
	x, y := twoBlobs(2000, 1)
	m := &linreg{w: make([]float32, 3)}
	seed := uint64(5)
	sess, err := dptrain.MakePrivate(m, x, y, dptrain.Config{
		BatchSize: 100, ClipNorm: 1, NoiseMultiplier: 1.2, LearningRate: 0.2, Steps: 100,
		Delta: 1e-5, Seed: &seed,
	})
	if err != nil {
		log.Fatal(err)
	}
	if err := sess.Run(context.Background(), nil); err != nil {
		log.Fatal(err)
	}
	correct := 0
	for i := range y {
		p := m.w[0]*x[2*i] + m.w[1]*x[2*i+1] + m.w[2]
		if (p > 0) == (y[i] == 1) {
			correct++
		}
	}
	eps, err := sess.CertifiedEpsilon()
	if err != nil {
		log.Fatal(err)
	}
	fmt.Printf("%d steps, ε = %.2f (certified, rdp), accuracy %.2f\n", sess.Steps(), eps, float64(correct)/float64(len(y)))
	// Output:
	// 100 steps, ε = 2.79 (certified, rdp), accuracy 0.98
}

// NewSession runs any optimizer from its configuration: here ModelMix (Xiao, Wan & Devadas,
// "Differentially Private Deep Learning with ModelMix", Algorithm 1), held to ε ≤ 1. The
// session builds the sampler, the noise stream the optimizer draws from, the accountants and
// the stop rule itself, so the records always declare the scheme that drew each batch. Seeded,
// so reproducible and NOT private.
func ExampleNewSession() {
	x, y := twoBlobs(2000, 1)
	net, err := models.New(models.Spec{Kind: "logreg", Input: []int{2}, Classes: 2}, rand.New(rand.NewPCG(2, 0)))
	if err != nil {
		log.Fatal(err)
	}
	seed := uint64(5)
	sess, err := dptrain.NewSession(dptrain.Parts{
		Model: net, Data: &data.Split{X: x, Y: y, N: len(y), D: 2}, BatchSize: 100, Steps: 1000,
		Optimizer: dptrain.Mechanism{New: func(sigma float64, noise *optim.Noise) (optim.Optimizer, error) {
			return modelmix.New(modelmix.Config{NoiseMultiplier: sigma, ClipNorm: 1, Schedule: optim.Constant{Rate: 0.5}, MixRatio: 0.02}, noise)
		}},
		NoiseMultiplier: 2,
		Privacy:         dptrain.Privacy{Accountants: []string{"rdp"}, TargetEpsilon: 1, Delta: 1e-5},
		Seed:            &seed,
	})
	if err != nil {
		log.Fatal(err)
	}
	if err := sess.Run(context.Background(), nil); err != nil {
		log.Fatal(err)
	}
	eps, err := sess.CertifiedEpsilon()
	if err != nil {
		log.Fatal(err)
	}
	fmt.Printf("stopped after %d steps at ε = %.2f ≤ 1 (rdp, certified)\n", sess.Steps(), eps)
	fmt.Printf("accuracy above 0.9: %v\n", accuracy(net, x, y) > 0.9)
	// Output:
	// stopped after 65 steps at ε = 1.00 ≤ 1 (rdp, certified)
	// accuracy above 0.9: true
}
