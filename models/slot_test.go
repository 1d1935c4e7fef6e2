package models_test

import (
	"flag"
	"fmt"
	"math"
	"math/rand/v2"
	"runtime"
	"strings"
	"testing"

	. "github.com/dptrain/dptrain/models"
	"github.com/dptrain/dptrain/models/graph"

	"github.com/dptrain/dptrain/data"
	"github.com/dptrain/dptrain/data/scattering"
)

// slotLong runs the slot test over every slot offset of two blocks and twice the targets.
var slotLong = flag.Bool("slot.long", false, "slot test: every slot offset of two blocks, twice the targets")

// slotCase is one shipped architecture at its real input size for the slot test.
type slotCase struct {
	name  string
	spec  Spec
	n     int  // batch size: crosses 32-sample blocks, and the chunk where Chunk is set
	heavy bool // fewer slots and targets unless -slot.long
}

// slotCases are the shipped model presets and the models of the shipped configs, at their
// real input sizes: the shapes at which BLAS kernels choose their paths.
func slotCases() []slotCase {
	tb, _ := Preset("cnn-tramer-boneh")
	tbWS := tb
	tbWS.WeightStandardization = true
	tbChunk := tb
	tbChunk.Chunk = 48
	cifar := Spec{Kind: "cnn", Input: []int{3, 32, 32}, Classes: 10, Layers: []LayerSpec{
		{Type: "conv2d", Out: 32, Kernel: 3, Padding: 1}, {Type: "tanh"},
		{Type: "conv2d", Out: 32, Kernel: 3, Padding: 1}, {Type: "tanh"},
		{Type: "maxpool", Kernel: 2, Stride: 2},
		{Type: "conv2d", Out: 64, Kernel: 3, Padding: 1}, {Type: "tanh"},
		{Type: "maxpool", Kernel: 2, Stride: 2},
		{Type: "flatten"}, {Type: "dense", Out: 128}, {Type: "tanh"}, {Type: "dense", Out: 10},
	}}
	return []slotCase{
		{name: "cnn-tramer-boneh", spec: Spec{Kind: "cnn-tramer-boneh"}, n: 70},
		{name: "cnn-tramer-boneh/chunk=48", spec: tbChunk, n: 100},
		{name: "cnn-tramer-boneh/ws", spec: tbWS, n: 40},
		{name: "lenet5", spec: Spec{Kind: "lenet5"}, n: 70},
		{name: "mlp-784-128-64-32-10", spec: Spec{Kind: "mlp-784-128-64-32-10"}, n: 70},
		{name: "mlp-784-256-10-tanh", spec: Spec{Kind: "mlp", Input: []int{784}, Classes: 10, Hidden: []int{256}, Activation: "tanh"}, n: 70},
		{name: "scatternet-cnn-fmnist", spec: Spec{Kind: "scatternet-cnn-fmnist"}, n: 70},
		{name: "scatternet-linear", spec: Spec{Kind: "logreg", Input: []int{81 * 7 * 7}, Classes: 10}, n: 70},
		{name: "cifar10-cnn", spec: cifar, n: 40, heavy: true},
		{name: "resnet20-gn", spec: Spec{Kind: "resnet20-gn"}, n: 40, heavy: true},
	}
}

// withDNNL returns engines, and engine dnnl after them in a binary built with the dnnl tag.
func withDNNL(engines ...string) []string {
	if DNNLBuilt {
		return append(engines, "dnnl")
	}
	return engines
}

// slotFillers returns n ordinary and crafted examples for a network with input shape in: uniform
// [0, 1) images, and, every few slots, a constant image (max-pool ties everywhere), one of huge
// pixels (saturated tanh, large norms), one of equal pixels in 2×2 cells (pool ties broken by
// the last bit) and one with a NaN.
func slotFillers(rng *rand.Rand, nw *Network, n int) data.Batch {
	d := nw.InDim()
	b := data.Batch{X: make([]float32, n*d), Y: make([]int32, n), N: n}
	w := d
	if in := nw.InputShape(); len(in) == 3 {
		w = in[2]
	}
	for i := 0; i < n; i++ {
		x := b.X[i*d : (i+1)*d]
		b.Y[i] = int32(rng.IntN(nw.Classes()))
		switch i % 11 {
		case 3:
			for j := range x {
				x[j] = 0.5
			}
		case 5:
			for j := range x {
				x[j] = float32(1e4 * rng.Float64())
			}
		case 7:
			for j := range x {
				row, col := j/w, j%w
				x[j] = float32(((row/2)*7+(col/2)*3)%5) / 4
			}
		case 9:
			for j := range x {
				x[j] = float32(rng.Float64())
			}
			x[d/2] = float32(math.NaN())
		default:
			for j := range x {
				x[j] = float32(rng.Float64())
			}
		}
	}
	return b
}

// contribution is what one example contributes to a release: its gradient (as
// PerSampleGradSum materialises it from the batch's forward and backward passes, nil if it was
// clipped to zero as non-finite) and its norm and clip factor (as ClippedGradSum computes them).
type contribution struct {
	grad []float32
	norm float64
	clip float32
}

// contributions runs nw on b and returns every example's contribution.
func contributions(t *testing.T, nw *Network, b data.Batch, clip float64) []contribution {
	t.Helper()
	np := len(nw.Params())
	out := make([]contribution, b.N)
	if _, err := nw.PerSampleGradSum(b, func(k int, g []float32) {
		out[k].grad = append([]float32(nil), g...)
	}, make([]float32, np)); err != nil {
		t.Fatalf("PerSampleGradSum: %v", err)
	}
	norms := make([]float64, b.N)
	if _, err := nw.ClippedGradSum(b, clip, make([]float32, np), norms); err != nil {
		t.Fatalf("ClippedGradSum: %v", err)
	}
	for k := range out {
		out[k].norm = norms[k]
		out[k].clip, _, _ = ClipScale(clip, norms[k])
	}
	return out
}

// sameBits reports where two contributions differ in any bit, with the largest difference of
// the gradient relative to its norm.
func (c contribution) sameBits(o contribution) (bool, string) {
	if math.Float64bits(c.norm) != math.Float64bits(o.norm) || math.Float32bits(c.clip) != math.Float32bits(o.clip) {
		return false, fmt.Sprintf("norm %v against %v, clip factor %v against %v", c.norm, o.norm, c.clip, o.clip)
	}
	if (c.grad == nil) != (o.grad == nil) {
		return false, fmt.Sprintf("clipped to zero as non-finite: %v against %v", c.grad == nil, o.grad == nil)
	}
	diff, first := 0, -1
	var d2 float64
	for k := range c.grad {
		if math.Float32bits(c.grad[k]) != math.Float32bits(o.grad[k]) {
			if first < 0 {
				first = k
			}
			diff++
			e := float64(c.grad[k]) - float64(o.grad[k])
			d2 += e * e
		}
	}
	if diff > 0 {
		return false, fmt.Sprintf("%d gradient coordinates differ (first %d: %v against %v), ‖Δg‖/‖g‖ = %.3g",
			diff, first, c.grad[first], o.grad[first], math.Sqrt(d2)/max(c.norm, 1e-30))
	}
	return true, ""
}

// rows returns examples [lo, hi) of b.
func rows(b data.Batch, d, lo, hi int) data.Batch {
	return data.Batch{X: b.X[lo*d : hi*d], Y: b.Y[lo:hi], N: hi - lo}
}

// withAt returns b with example x (label y) inserted at slot s.
func withAt(b data.Batch, d, s int, x []float32, y int32) data.Batch {
	return concat(rows(b, d, 0, s), data.Batch{X: x, Y: []int32{y}, N: 1}, rows(b, d, s, b.N))
}

// concat joins batches.
func concat(bs ...data.Batch) data.Batch {
	var out data.Batch
	for _, b := range bs {
		out.X, out.Y, out.N = append(out.X, b.X...), append(out.Y, b.Y...), out.N+b.N
	}
	return out
}

// fashionImages returns up to n Fashion-MNIST test images (pixels in [0, 1]) when the dataset is
// installed (Debian's dataset-fashion-mnist), or nil.
func fashionImages(t *testing.T, n int) data.Batch {
	spec, err := data.Lookup("fashion-mnist")
	if err != nil {
		t.Fatal(err)
	}
	ds, err := data.ReadIDXDir("/usr/share/datasets/fashion-mnist", spec)
	if err != nil || ds.Test == nil {
		return data.Batch{}
	}
	n = min(n, ds.Test.N)
	return data.Batch{X: ds.Test.X[:n*784], Y: ds.Test.Y[:n], N: n}
}

// slotTargets are the examples the slot test follows for nw: real Fashion-MNIST images as they
// are and standardised (28×28 inputs, when the dataset is installed) or their ScatterNet
// features (81×7×7 inputs), then uniform [0, 1) inputs, with a constant and a NaN one among them.
func slotTargets(t *testing.T, nw *Network, rng *rand.Rand, n int, real data.Batch) data.Batch {
	d := nw.InDim()
	b := data.Batch{X: make([]float32, n*d), Y: make([]int32, n), N: n}
	var sc *scattering.Scattering
	var ws *scattering.Workspace
	if in := nw.InputShape(); real.N > 0 && len(in) == 3 && in[0] == 81 && in[1] == 7 {
		sc, _ = scattering.New(28, 28, 2, 8)
		ws = sc.NewWorkspace()
	}
	for i := 0; i < n; i++ {
		x := b.X[i*d : (i+1)*d]
		b.Y[i] = int32(rng.IntN(nw.Classes()))
		switch {
		case i == 3:
			for j := range x {
				x[j] = 0.5
			}
		case i == 7:
			for j := range x {
				x[j] = float32(rng.Float64())
			}
			x[d-1] = float32(math.NaN())
		case i < n/2 && real.N > i && d == 784:
			copy(x, real.X[i*784:(i+1)*784])
			b.Y[i] = real.Y[i]
			if i%2 == 1 { // as normalize: standard does, with Fashion-MNIST's mean and deviation
				for j := range x {
					x[j] = (x[j] - 0.2860) / 0.3530
				}
			}
		case i < n/2 && real.N > i && sc != nil:
			sc.Apply(x, real.X[i*784:(i+1)*784], 1, ws)
			b.Y[i] = real.Y[i]
		default:
			for j := range x {
				x[j] = float32(rng.Float64())
			}
		}
	}
	return b
}

// TestEachExampleAloneBitForBit is the privacy contract's per-example invariant (DESIGN.md,
// "each example alone, bit for bit"): what an example contributes to a clipped sum — its
// gradient, assembled from its activations and its output gradients, its norm and its clip
// factor — is bit-identical at every slot of a batch, whatever its neighbours (ordinary,
// constant, huge, tied and NaN images), the batch size, the block, chunk and worker count, and
// equal to the example processed alone. It runs every shipped architecture at its real input
// size, where BLAS kernels pick their paths by shape and row offset (OpenBLAS computes a GEMM
// row at different offsets along different micro-kernel paths, and a tolerance cannot see
// that last bit, which a max-pool near-tie turns into a different gradient), on every engine (dnnl too where it is built in).
// Each target example (real Fashion-MNIST images and their ScatterNet features where the
// dataset is installed, random inputs, a constant and a NaN one) is run alone, then in batches
// that put a prefix of crafted fillers before the targets, so that every target visits every
// sampled slot offset of a block; -slot.long samples every offset and more targets.
func TestEachExampleAloneBitForBit(t *testing.T) {
	const clip = 1.0
	real := fashionImages(t, 64)
	if real.N == 0 {
		t.Log("Fashion-MNIST not installed (apt-get install dataset-fashion-mnist): random targets only")
	}
	for _, tc := range slotCases() {
		// direct/gemv: the direct executor's path for CPUs without AVX2 and FMA.
		for _, engine := range withDNNL("direct", "direct/gemv", "graph") {
			spec := tc.spec
			spec.Engine = strings.TrimSuffix(engine, "/gemv")
			nw, err := graph.New(spec, rand.New(rand.NewPCG(11, 12)))
			if err != nil {
				t.Fatalf("%s/%s: New: %v", tc.name, engine, err)
			}
			if nw.Engine() != spec.Engine {
				continue // the direct executor does not run this network
			}
			if engine == "direct/gemv" {
				if tc.heavy || !nw.DirectFMA() {
					continue // dense layers are a small part of these; or no other path
				}
				nw.SetDirectFMA(false)
			}
			name := tc.name + "/" + engine
			rng := rand.New(rand.NewPCG(13, 14))
			d := nw.InDim()
			nt, shifts := 24, []int{0, 1, 2, 3, 5, 6, 7, 11, 12, 13, 17, 18, 23, 24, 31}
			switch {
			case tc.heavy && engine == "graph":
				nt, shifts = 6, []int{0, 1}
			case tc.heavy:
				nt, shifts = 10, []int{0, 1, 6}
			case engine != "direct": // slower, or a second path: fewer
				nt, shifts = 12, []int{0, 1, 2, 5, 6, 7, 12, 13}
			}
			if *slotLong {
				nt, shifts = 2*nt, nil
				for s := range 2 * DirectBlock {
					shifts = append(shifts, s)
				}
			}
			targets := slotTargets(t, nw, rng, nt, real)
			fill := slotFillers(rng, nw, 2*DirectBlock+tc.n)
			alone := make([]contribution, nt)
			for i := range nt {
				alone[i] = contributions(t, nw, rows(targets, d, i, i+1), clip)[0]
			}
			for si, s := range shifts {
				b := concat(rows(fill, d, 0, s), targets, rows(fill, d, s, s+max(tc.n-nt-s, 1)))
				workers := runtime.GOMAXPROCS(0)
				if si == 1 { // one worker, as well as every core
					workers = runtime.GOMAXPROCS(1)
				}
				got := contributions(t, nw, b, clip)
				if si == 1 {
					runtime.GOMAXPROCS(workers)
				}
				for i := range nt {
					if ok, why := got[s+i].sameBits(alone[i]); !ok {
						t.Errorf("%s: target %d at slot %d of %d differs from the example alone: %s", name, i, s+i, b.N, why)
					}
				}
			}
		}
	}
}

// clippedContributions are the clipped gradients of b's examples, as the clipped sum adds them
// (nil for an example clipped to zero).
func clippedContributions(t *testing.T, nw *Network, b data.Batch, clip float64) [][]float32 {
	t.Helper()
	out := make([][]float32, b.N)
	for i, c := range contributions(t, nw, b, clip) {
		for k := range c.grad {
			c.grad[k] *= c.clip
		}
		out[i] = c.grad
	}
	return out
}

// TestSlotAmplification is the attack that a slot-dependent contribution allows: copies of
// one image whose contribution differs between two slots, placed so that removing the first
// example moves every copy from one slot class to the other (offsets 1, 4, 7, … of each
// 32-sample block to 0, 3, 6, …, the period of OpenBLAS's paths on cnn-tramer-boneh's first
// conv layer). With contributions that depend on the slot, the differences add up and
// ‖S(B) − S(B∖first)‖ grows with the batch (4.7·C at 513 examples before each example was
// computed alone); with contributions that do not, it is the removed example's, ≤ C, up to the
// one rounding of each float32 sum (u·‖S‖, u = 2⁻²⁴).
func TestSlotAmplification(t *testing.T) {
	const clip = 1.0
	for _, engine := range withDNNL("direct", "graph") {
		nw, err := graph.New(Spec{Kind: "cnn-tramer-boneh", Engine: engine}, rand.New(rand.NewPCG(21, 22)))
		if err != nil {
			t.Fatal(err)
		}
		d := nw.InDim()
		rng := rand.New(rand.NewPCG(23, 24))
		pool := slotFillers(rng, nw, 320)
		// The image whose clipped contribution moves most when it moves up one slot: each
		// group of 64 images is run as it is and behind one more image.
		best, worst := 0, -1.0
		for lo := 0; lo < pool.N; lo += 64 {
			grp := data.Batch{X: pool.X[lo*d : (lo+64)*d], Y: pool.Y[lo : lo+64], N: 64}
			here := clippedContributions(t, nw, grp, clip)
			there := clippedContributions(t, nw, withAt(grp, d, 0, pool.X[:d], 0), clip)[1:]
			for i := range here {
				if here[i] == nil || there[i] == nil {
					continue
				}
				if e := diffNorm(here[i], there[i]); e > worst {
					best, worst = lo+i, e
				}
			}
		}
		x, y := pool.X[best*d:(best+1)*d], pool.Y[best]
		t.Logf("%s: image %d of the pool moves by %.3g·C between two neighbouring slots", engine, best, worst/clip)
		for _, n := range []int{33, 129, 513} {
			b := data.Batch{X: make([]float32, 0, n*d), Y: make([]int32, 0, n), N: n}
			copies := 0
			for s := 0; s < n; s++ {
				if s > 0 && (s%DirectBlock)%3 == 1 {
					b.X, b.Y = append(b.X, x...), append(b.Y, y)
					copies++
					continue
				}
				f := (s * 7) % pool.N
				if f%11 == 9 {
					f++ // no NaN filler: every filler's contribution stays in the sum
				}
				b.X, b.Y = append(b.X, pool.X[f*d:(f+1)*d]...), append(b.Y, pool.Y[f])
			}
			bn := data.Batch{X: b.X[d:], Y: b.Y[1:], N: n - 1}
			s, sn := make([]float32, len(nw.Params())), make([]float32, len(nw.Params()))
			if _, err := nw.ClippedGradSum(b, clip, s, nil); err != nil {
				t.Fatal(err)
			}
			if _, err := nw.ClippedGradSum(bn, clip, sn, nil); err != nil {
				t.Fatal(err)
			}
			delta := diffNorm(s, sn)
			allow := 0x1p-24 * (norm2(s) + norm2(sn))
			t.Logf("%s: batch %d, %d copies: ‖S(B) − S(B∖first)‖ = %.9f·C (rounding allowance %.2g·C)", engine, n, copies, delta/clip, allow/clip)
			if delta > clip*(1+1e-6)+allow {
				t.Errorf("%s: batch %d with %d copies of a slot-sensitive image: removing one example moved the clipped sum by %.6f·C > C",
					engine, n, copies, delta/clip)
			}
		}
	}
}
