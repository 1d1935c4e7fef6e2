package models_test

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/dptrain/dptrain/data"
	. "github.com/dptrain/dptrain/models"
	"github.com/dptrain/dptrain/models/graph"
)

// Everything an example contributes to a private release must depend on that example alone:
// not on its slot (row position) in the batch, its neighbours, the batch size or the chunk
// size. BLAS kernels may round a GEMM row differently depending on its offset in the matrix
// (OpenBLAS's) or on its operands' alignment (gonum's), so the graph engine must never compute
// one example's values inside a product over several examples' rows (see rowMatMulOp).
// TestGraphSlotInvariance places copies of one target example at several slots of a batch of
// other random examples and requires the target's per-sample gradient, gradient norm, trace
// (loss and linear-layer inputs) and perturbed losses to be bit-identical to those of the
// target processed alone.

// graphSlotCase is a network with the slots to put the target at, a batch size and the chunk sizes
// to run it at (the first is the reference network's).
type graphSlotCase struct {
	name   string
	spec   Spec
	n      int
	slots  []int
	chunks []int
	short  []int // slots under -short (nil: the same)
}

var graphSlots = []int{0, 1, 2, 5, 6, 11, 12, 31, 32, 39}

var graphSlotCases = []graphSlotCase{
	// Chunk 64 holds the batch of 40 in one padded run; chunk 16 splits it into three, so that
	// slots 12, 31, 32 and 39 are rows 12, 15, 0 and 7 of their chunk.
	{name: "cnn-tramer-boneh", spec: Spec{Kind: "cnn-tramer-boneh"}, n: 40, slots: graphSlots, chunks: []int{64, 16}},
	{name: "lenet5", spec: Spec{Kind: "lenet5"}, n: 40, slots: graphSlots, chunks: []int{64, 16}},
	{name: "mlp-784-128-64-32-10", spec: Spec{Kind: "mlp-784-128-64-32-10"}, n: 40, slots: graphSlots, chunks: []int{256, 16}},
	{name: "scatternet-cnn-fmnist", spec: Spec{Kind: "scatternet-cnn-fmnist"}, n: 40, slots: graphSlots, chunks: []int{64, 16}},
	// Standardised conv weights: the per-example gradients are mapped back through Ŵ.
	{name: "scatternet-cnn-fmnist-ws", spec: Spec{Kind: "scatternet-cnn-fmnist", WeightStandardization: true}, n: 40,
		slots: graphSlots, chunks: []int{64, 16}},
	{name: "mlp-gelu", spec: Spec{Kind: "mlp", Input: []int{784}, Classes: 10, Hidden: []int{128, 64}, Activation: "gelu"},
		n: 40, slots: graphSlots, chunks: []int{64, 16}},
	// ResNet-20 costs about 0.6 s per 32 examples: a batch of 13 in chunks of 8 and 4 still
	// puts the target's rows at every offset modulo OpenBLAS's unroll of 12 (its 1024, 256 and
	// 64 rows a layer are all 4 modulo 12).
	{name: "resnet20-gn", spec: Spec{Kind: "resnet20-gn"}, n: 13, slots: []int{0, 1, 2, 5, 6, 11, 12}, chunks: []int{8, 4},
		short: []int{1, 2}},
}

// slotOutputs is what one example contributes to each release the model makes.
type slotOutputs struct {
	grad      []float32   // PerSampleGradSum's g_i
	norm      float64     // ClippedGradSum's ‖g_i‖
	loss      float64     // Trace's loss
	inputs    [][]float32 // Trace's linear-layer inputs, the example's rows
	perturbed float64     // PerturbedLosses with every layer's noise
	from      []float64   // PerturbedLossesFrom with one layer's noise, per layer
}

// slotRun runs every per-example release of nw on b and returns the outputs of the examples
// at slots. noise[l] is the noise of one example for linear layer l: the examples at slots get
// it, the others fresh noise from rng.
func slotRun(t *testing.T, nw *Network, b data.Batch, slots []int, noise [][]float32, rng *rand.Rand) []slotOutputs {
	t.Helper()
	out := make([]slotOutputs, len(slots))
	at := make(map[int]int, len(slots))
	for k, s := range slots {
		at[s] = k
	}
	grad := make([]float32, len(nw.Params()))
	if _, err := nw.PerSampleGradSum(b, func(i int, g []float32) {
		if k, ok := at[i]; ok {
			out[k].grad = slices.Clone(g)
		}
	}, grad); err != nil {
		t.Fatal(err)
	}
	norms := make([]float64, b.N)
	if _, err := nw.ClippedGradSum(b, 1, grad, norms); err != nil {
		t.Fatal(err)
	}
	for k, s := range slots {
		out[k].norm = norms[s]
	}
	if nw.RefuseStandardised() != nil {
		return out // standardised weights: no forward-only estimators
	}
	lin := nw.LinearLayers()
	batchNoise := make([][]float32, len(lin))
	for l, ll := range lin {
		w := ll.Geometry.Rows * ll.Geometry.Out
		batchNoise[l] = make([]float32, b.N*w)
		for i := 0; i < b.N; i++ {
			if _, ok := at[i]; ok {
				copy(batchNoise[l][i*w:], noise[l])
				continue
			}
			for q := range w {
				batchNoise[l][i*w+q] = float32(0.1 * rng.NormFloat64())
			}
		}
	}
	perturbed := make([]float64, b.N)
	if err := nw.PerturbedLosses(b, batchNoise, perturbed); err != nil {
		t.Fatal(err)
	}
	for k, s := range slots {
		out[k].perturbed = perturbed[s]
	}
	if nw.ForwardOnlyCovered() != nil {
		return out // GroupNorm: no trace
	}
	tr, err := nw.Trace(b)
	if err != nil {
		t.Fatal(err)
	}
	from := make([][]float64, len(lin))
	for l := range lin {
		from[l] = make([]float64, b.N)
		if err := nw.PerturbedLossesFrom(b, tr, l, batchNoise[l], from[l]); err != nil {
			t.Fatal(err)
		}
	}
	for k, s := range slots {
		out[k].loss = tr.Loss[s]
		for l, ll := range lin {
			w := ll.Geometry.Rows * ll.Geometry.In
			out[k].inputs = append(out[k].inputs, slices.Clone(tr.Inputs[l][s*w:(s+1)*w]))
			out[k].from = append(out[k].from, from[l][s])
		}
	}
	return out
}

// diff32 describes how got differs from want: "" when bit-identical, else the count of
// differing values, the largest absolute difference and that relative to ‖want‖₂.
func diff32(got, want []float32) string {
	if len(got) != len(want) {
		return fmt.Sprintf("length %d, want %d", len(got), len(want))
	}
	n, mx, norm := 0, 0.0, 0.0
	for i, w := range want {
		norm += float64(w) * float64(w)
		if math.Float32bits(got[i]) != math.Float32bits(w) {
			n++
			mx = math.Max(mx, math.Abs(float64(got[i])-float64(w)))
		}
	}
	if n == 0 {
		return ""
	}
	return fmt.Sprintf("%d of %d values differ, max |Δ| %.3g (%.3g of the norm)", n, len(want), mx, mx/math.Max(math.Sqrt(norm), 1e-30))
}

// diff64 is diff32 for one float64.
func diff64(got, want float64) string {
	if math.Float64bits(got) == math.Float64bits(want) {
		return ""
	}
	return fmt.Sprintf("%v, want %v (Δ %.3g, %.3g relative)", got, want, got-want, (got-want)/math.Abs(want))
}

// compare returns the differences of got from want, one line per quantity.
func (want slotOutputs) compare(got slotOutputs) []string {
	var out []string
	add := func(what, d string) {
		if d != "" {
			out = append(out, what+": "+d)
		}
	}
	add("per-sample gradient", diff32(got.grad, want.grad))
	add("gradient norm", diff64(got.norm, want.norm))
	add("perturbed loss", diff64(got.perturbed, want.perturbed))
	add("trace loss", diff64(got.loss, want.loss))
	for l := range want.inputs {
		add(fmt.Sprintf("trace input %d", l), diff32(got.inputs[l], want.inputs[l]))
		add(fmt.Sprintf("perturbed-from loss %d", l), diff64(got.from[l], want.from[l]))
	}
	return out
}

// TestGraphSlotInvariance checks, for every preset and a gelu MLP on the graph engine at
// their real input sizes, that a target example's per-example outputs do not depend on its
// slot, its neighbours, the batch size or the chunk size: they must equal, bit for bit, those
// of the target alone in a batch of one.
func TestGraphSlotInvariance(t *testing.T) {
	for _, tc := range graphSlotCases {
		t.Run(tc.name, func(t *testing.T) {
			slots := tc.slots
			if testing.Short() && tc.short != nil {
				slots = tc.short
			}
			n := min(tc.n, slots[len(slots)-1]+2)
			rng := rand.New(rand.NewPCG(11, 12))
			var ref *Network
			var want slotOutputs
			var noise [][]float32
			target := data.Batch{N: 1, Y: []int32{3}}
			for _, chunk := range tc.chunks {
				spec := tc.spec
				spec.Engine, spec.Chunk = "graph", chunk
				nw, err := graph.New(spec, rand.New(rand.NewPCG(5, 6)))
				if err != nil {
					t.Fatal(err)
				}
				if ref == nil {
					ref = nw
					target.X = make([]float32, nw.InDim())
					for i := range target.X {
						target.X[i] = rng.Float32()
					}
					for _, l := range nw.LinearLayers() {
						z := make([]float32, l.Geometry.Rows*l.Geometry.Out)
						for i := range z {
							z[i] = float32(0.1 * rng.NormFloat64())
						}
						noise = append(noise, z)
					}
					want = slotRun(t, nw, target, []int{0}, noise, rng)[0]
				} else {
					copy(nw.Params(), ref.Params())
					if d := want.compare(slotRun(t, nw, target, []int{0}, noise, rng)[0]); d != nil {
						t.Errorf("chunk %d, alone: %s", chunk, strings.Join(d, "; "))
					}
				}
				b := data.Batch{X: make([]float32, n*nw.InDim()), Y: make([]int32, n), N: n}
				for i := range b.X {
					b.X[i] = rng.Float32()
				}
				for i := range b.Y {
					b.Y[i] = int32(rng.IntN(nw.Classes()))
				}
				for _, s := range slots {
					copy(b.X[s*nw.InDim():(s+1)*nw.InDim()], target.X)
					b.Y[s] = target.Y[0]
				}
				for k, got := range slotRun(t, nw, b, slots, noise, rng) {
					if d := want.compare(got); d != nil {
						t.Errorf("chunk %d, slot %d of %d: %s", chunk, slots[k], n, strings.Join(d, "; "))
					}
				}
			}
		})
	}
}
