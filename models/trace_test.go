package models_test

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/dptrain/dptrain/models/graph"
)

// Noise c added to every output row of a layer with a bias is the same network as the bias
// shifted by c: PerturbedLosses must match Evaluate on the shifted network, for each dense and
// conv layer, in chunks and padded buckets; nil noise matches Trace; Trace's first input is X.
func TestPerturbedLossesIsABiasShift(t *testing.T) {
	for _, tc := range tinySpecs {
		if tc.name == "conv-materialise-groupnorm" || tc.name == "resblocks-gap" || tc.name == "logreg-nobias" || tc.name == "conv-gram-avgpool" {
			continue // GroupNorm is refused (tested below); bias-free layers have nothing to shift
		}
		spec := tc.spec
		spec.Chunk = 2
		rng := rand.New(rand.NewPCG(9, 10))
		nw, err := graph.New(spec, rng)
		if err != nil {
			t.Fatal(err)
		}
		b := randomBatch(rng, nw, 5)
		tr, err := nw.Trace(b)
		if err != nil {
			t.Fatal(err)
		}
		if tc.spec.Kind != "cnn" {
			for i, v := range tr.Inputs[0] {
				if v != b.X[i] {
					t.Fatalf("%s: Trace's first-layer input differs from X at %d", tc.name, i)
				}
			}
		}
		lin := nw.LinearLayers()
		loss := make([]float64, b.N)
		if err := nw.PerturbedLosses(b, make([][]float32, len(lin)), loss); err != nil {
			t.Fatal(err)
		}
		sum := 0.0
		for i, l := range loss {
			sum += l
			if math.Abs(l-tr.Loss[i]) > 1e-6 {
				t.Errorf("%s: nil noise changed example %d's loss %v → %v", tc.name, i, tr.Loss[i], l)
			}
		}
		if s, _ := nw.Evaluate(b); math.Abs(s.Loss-sum) > 1e-4 {
			t.Errorf("%s: layer.Trace losses sum to %v, Evaluate says %v", tc.name, sum, s.Loss)
		}
		for li, l := range lin {
			shift := make([]float32, l.Geometry.Out)
			noise := make([][]float32, len(lin))
			noise[li] = make([]float32, b.N*l.Geometry.Rows*l.Geometry.Out)
			for c := range shift {
				shift[c] = float32(rng.NormFloat64())
			}
			for r := 0; r < b.N*l.Geometry.Rows; r++ {
				copy(noise[li][r*l.Geometry.Out:], shift)
			}
			if err := nw.PerturbedLosses(b, noise, loss); err != nil {
				t.Fatal(err)
			}
			p := nw.Params()
			for c, v := range shift {
				p[l.Bias+c] += v
			}
			s, _ := nw.Evaluate(b)
			for c, v := range shift {
				p[l.Bias+c] -= v
			}
			got := 0.0
			for _, v := range loss {
				got += v
			}
			if math.Abs(got-s.Loss) > 1e-4*math.Max(1, s.Loss) {
				t.Errorf("%s layer %s: perturbed losses sum to %v, bias-shifted network %v", tc.name, l.Name, got, s.Loss)
			}
		}
	}
	gn, _ := graph.New(tinySpecs[7].spec, rand.New(rand.NewPCG(1, 1)))
	if _, err := gn.Trace(randomBatch(rand.New(rand.NewPCG(1, 2)), gn, 2)); err == nil {
		t.Error("Trace accepted a GroupNorm network")
	}
}

// A perturbed pass must leave nothing behind: on layers without a bias the noise goes into an
// input that no bias refills, so a later pass on the same graph (Evaluate, another perturbed
// pass) would add it again. Losses after a perturbed pass must equal those before, bit for bit.
func TestPerturbedLossesLeavesNoNoise(t *testing.T) {
	for _, tc := range tinySpecs {
		if tc.name != "logreg-nobias" && tc.name != "conv-gram-avgpool" {
			continue
		}
		spec := tc.spec
		spec.Chunk, spec.Engine = 4, "graph" // Evaluate runs on the graph the perturbed pass used
		rng := rand.New(rand.NewPCG(3, 4))
		nw, err := graph.New(spec, rng)
		if err != nil {
			t.Fatal(err)
		}
		b := randomBatch(rng, nw, 3)
		lin := nw.LinearLayers()
		clean := make([]float64, b.N)
		if err := nw.PerturbedLosses(b, make([][]float32, len(lin)), clean); err != nil {
			t.Fatal(err)
		}
		before, _ := nw.Evaluate(b)
		noise := make([][]float32, len(lin))
		for i, l := range lin {
			noise[i] = make([]float32, b.N*l.Geometry.Rows*l.Geometry.Out)
			for k := range noise[i] {
				noise[i][k] = float32(rng.NormFloat64())
			}
		}
		loss := make([]float64, b.N)
		if err := nw.PerturbedLosses(b, noise, loss); err != nil {
			t.Fatal(err)
		}
		if after, _ := nw.Evaluate(b); after.Loss != before.Loss {
			t.Errorf("%s: Evaluate's loss %v before a perturbed pass, %v after", tc.name, before.Loss, after.Loss)
		}
		if err := nw.PerturbedLosses(b, make([][]float32, len(lin)), loss); err != nil {
			t.Fatal(err)
		}
		for i := range loss {
			if loss[i] != clean[i] {
				t.Errorf("%s: example %d's unperturbed loss %v before a perturbed pass, %v after", tc.name, i, clean[i], loss[i])
			}
		}
	}
}
