package modelmix_test

import (
	"fmt"
	"log"

	"github.com/dptrain/dptrain/accounting"
	"github.com/dptrain/dptrain/accounting/modelmix"
)

// The noise a CIFAR-10 run needs for ε = 4 at δ = 1e-5 (q = 0.03, 3500 steps), with plain
// DP-SGD and with ModelMix (Xiao, Wan & Devadas, "Differentially Private Deep Learning with
// ModelMix", Corollary 4.1) mixing a box of width 225 at clip norm 20 (W = 11.25) and l2+l∞
// clipping in p = 100 parts: the mixing's amplification lets it use less noise.
func ExampleCalibrateNoise() {
	for _, c := range []struct {
		name string
		w    float64
		p    int
	}{{"DP-SGD", 0, 1}, {"ModelMix", 225.0 / 20, 100}} {
		z, err := modelmix.CalibrateNoise(4, 1e-5, 0.03, 3500, c.w, c.p)
		if err != nil {
			log.Fatal(err)
		}
		fmt.Printf("%s: noise multiplier %.3f\n", c.name, z)
	}
	// Output:
	// DP-SGD: noise multiplier 2.198
	// ModelMix: noise multiplier 0.781
}

// The live accountant reads the optimizer's record, here the ModelMix run above at noise
// multiplier 0.79: the record's MixWidth is in the units of its Sensitivity (the clip norm 20).
// With mixing, the bound rests on steps the paper does not prove, and its label says so.
func ExampleAccountant() {
	a, err := modelmix.New(accounting.Run{UpdateRule: "sgd"})
	if err != nil {
		log.Fatal(err)
	}
	err = a.Compose(accounting.Step{Mechanism: accounting.Gaussian, Sampling: accounting.Poisson,
		Neighbouring: accounting.AddRemove, NoiseMultiplier: 0.79, SampleRate: 0.03, Count: 3500,
		Sensitivity: 20, NoiseStd: 0.79 * 20, MixWidth: 225, LinfParts: 100})
	if err != nil {
		log.Fatal(err)
	}
	g, err := a.Epsilon(1e-5)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Printf("ε = %.2f at order %g (%s)\n", g.Epsilon, g.Order, g.Label)
	// Output:
	// ε = 3.97 at order 6 (paper)
}
