package augment

import (
	"math"
	"math/rand/v2"
	"runtime"
	"slices"
	"sync"
	"testing"

	"github.com/dptrain/dptrain/data"
	"github.com/dptrain/dptrain/models"
	"github.com/dptrain/dptrain/optim"
)

// tableOracle is a model whose per-sample gradient is a function of the row and its input,
// with PerSampleGradSum's contract: f on several goroutines, non-finite gradients skipped and
// counted.
type tableOracle struct {
	params []float32
	grad   func(r int, x []float32) []float32
	dim    int
}

func (o *tableOracle) Params() []float32 { return o.params }

func (o *tableOracle) ClippedGradSum(b data.Batch, clip float64, grad []float32, norms []float64) (data.Stats, error) {
	var clipped, bad int
	var mu sync.Mutex
	st, err := o.PerSampleGradSum(b, func(i int, g []float32) {
		c, err := optim.ClipL2(g, clip)
		mu.Lock()
		defer mu.Unlock()
		if norms != nil {
			norms[i] = optim.Norm2(g)
		}
		if c {
			clipped++
		}
		if err != nil {
			bad++
		}
	}, grad)
	st.Clipped, st.NonFinite = clipped, st.NonFinite+bad
	return st, err
}

func (o *tableOracle) PerSampleGradSum(b data.Batch, f func(i int, g []float32), grad []float32) (data.Stats, error) {
	gs := make([][]float32, b.N)
	var wg sync.WaitGroup
	for r := range b.N {
		wg.Add(1)
		go func() {
			defer wg.Done()
			g := o.grad(r, b.X[r*o.dim:(r+1)*o.dim])
			if n := optim.Norm2(g); math.IsNaN(n) || math.IsInf(n, 0) {
				return
			}
			if f != nil {
				f(r, g)
			}
			gs[r] = g
		}()
	}
	wg.Wait()
	clear(grad)
	st := data.Stats{N: b.N}
	for _, g := range gs {
		if g == nil {
			st.NonFinite++
			continue
		}
		for t, v := range g {
			grad[t] += v
		}
	}
	return st, nil
}

// Averaging then clipping, by hand: a model whose gradient for row r of the inner batch is the
// table's row, so that example i's copies are rows 2i and 2i+1.
func TestClippedAverageByHand(t *testing.T) {
	table := [][]float32{
		{3, 0}, {0, 4}, // average (1.5, 2), norm 2.5 → clipped to (0.6, 0.8)
		{0.2, 0}, {0, 0.2}, // average (0.1, 0.1), norm √0.02, unclipped
		{1e38, 1e38}, {1e38, 1e38}, // huge but finite average: norm ≈ 1.4e38 → clipped to (√½, √½)
		{float32(math.NaN()), 0}, {1, 1}, // one non-finite copy: the example is zero
	}
	inner := &tableOracle{params: []float32{1, 2}, dim: 2, grad: func(r int, _ []float32) []float32 { return slices.Clone(table[r]) }}
	o, err := New(inner, Config{Multiplicity: 2, Flip: true, Shape: [3]int{1, 1, 2}}, [32]byte{}, zero)
	if err != nil {
		t.Fatal(err)
	}
	b := data.Batch{X: make([]float32, 8), Y: make([]int32, 4), N: 4}
	grad := make([]float32, 2)
	norms := make([]float64, 4)
	st, err := o.ClippedGradSum(b, 1, grad, norms)
	if err != nil {
		t.Fatal(err)
	}
	h := math.Sqrt(0.5)
	want := []float64{0.6 + 0.1 + h, 0.8 + 0.1 + h}
	for j := range want {
		if math.Abs(float64(grad[j])-want[j]) > 1e-6 {
			t.Errorf("grad[%d] = %v, want %v", j, grad[j], want[j])
		}
	}
	wantNorms := []float64{2.5, math.Sqrt(0.02), math.Sqrt(2) * 1e38, math.Inf(1)}
	for i, w := range wantNorms {
		if !(math.Abs(norms[i]-w) <= 1e-6*math.Max(1, math.Abs(w))) && norms[i] != w {
			t.Errorf("norm %d = %v, want %v", i, norms[i], w)
		}
	}
	if st.N != 4 || st.Clipped != 2 || st.NonFinite != 1 {
		t.Errorf("stats %+v: want N 4, Clipped 2, NonFinite 1", st)
	}

	// PerSampleGradSum passes the averages.
	var mu sync.Mutex
	got := map[int][]float32{}
	st, err = o.PerSampleGradSum(b, func(i int, g []float32) {
		mu.Lock()
		got[i] = slices.Clone(g)
		mu.Unlock()
	}, grad)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 3 || got[3] != nil || st.NonFinite != 1 {
		t.Fatalf("f saw examples %v, NonFinite %d: want 0, 1, 2 and 1", got, st.NonFinite)
	}
	if !slices.Equal(got[0], []float32{1.5, 2}) || !slices.Equal(got[1], []float32{0.1, 0.1}) {
		t.Errorf("averages %v and %v, want [1.5 2] and [0.1 0.1]", got[0], got[1])
	}
}

// tinyCNN is a conv net on 2×6×6 images (direct executor).
func tinyCNN(t *testing.T) *models.Network {
	t.Helper()
	spec := models.Spec{Kind: "cnn", Input: []int{2, 6, 6}, Classes: 3, Layers: []models.LayerSpec{
		{Type: "conv2d", Out: 4, Kernel: 3, Padding: 1}, {Type: "tanh"}, {Type: "maxpool", Kernel: 2},
		{Type: "flatten"}, {Type: "dense", Out: 3},
	}}
	nw, err := models.New(spec, rand.New(rand.NewPCG(3, 4)))
	if err != nil {
		t.Fatal(err)
	}
	return nw
}

func randomBatch(n, dim int, seed uint64) data.Batch {
	r := rand.New(rand.NewPCG(seed, 1))
	b := data.Batch{X: make([]float32, n*dim), Y: make([]int32, n), N: n}
	for i := range b.X {
		b.X[i] = float32(r.NormFloat64())
	}
	for i := range b.Y {
		b.Y[i] = int32(r.IntN(3))
	}
	return b
}

var shape = [3]int{2, 6, 6}

// zero is a round function that never advances.
func zero() uint64 { return 0 }

// Without crops or flips and K = 1 (or 0) the wrapper is the model: the same sum, norms and
// stats, bit for bit.
func TestOneCopyIsTheModel(t *testing.T) {
	nw := tinyCNN(t)
	b := randomBatch(37, 72, 1)
	np := len(nw.Params())
	for _, k := range []int{0, 1} {
		o, err := New(nw, Config{Multiplicity: k, Shape: shape}, [32]byte{1}, zero)
		if err != nil {
			t.Fatal(err)
		}
		for _, clip := range []float64{0.05, math.Inf(1)} {
			want, got := make([]float32, np), make([]float32, np)
			wn, gn := make([]float64, b.N), make([]float64, b.N)
			ws, err := nw.ClippedGradSum(b, clip, want, wn)
			if err != nil {
				t.Fatal(err)
			}
			gs, err := o.ClippedGradSum(b, clip, got, gn)
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(got, want) || !slices.Equal(gn, wn) || gs != ws {
				t.Errorf("K = %d, clip %v: the wrapper's sum, norms or stats differ from the model's", k, clip)
			}
		}
	}
}

// With flips only and an image symmetric under them, every copy is the example: the average
// of K copies is the model's gradient (to rounding), and so is the clipped sum.
func TestSymmetricCopiesAverageToTheModel(t *testing.T) {
	nw := tinyCNN(t)
	b := randomBatch(9, 72, 2)
	for i := range b.N { // mirror each row: x[c][y][5−x] = x[c][y][x]
		for r := range 12 {
			row := b.X[i*72+r*6 : i*72+r*6+6]
			for x := range 3 {
				row[5-x] = row[x]
			}
		}
	}
	np := len(nw.Params())
	o, err := New(nw, Config{Multiplicity: 4, Flip: true, Shape: shape}, [32]byte{2}, zero)
	if err != nil {
		t.Fatal(err)
	}
	want, got := make([]float32, np), make([]float32, np)
	ws, err := nw.ClippedGradSum(b, 0.05, want, nil)
	if err != nil {
		t.Fatal(err)
	}
	gs, err := o.ClippedGradSum(b, 0.05, got, nil)
	if err != nil {
		t.Fatal(err)
	}
	for j := range want {
		if math.Abs(float64(got[j]-want[j])) > 1e-5*(1+math.Abs(float64(want[j]))) {
			t.Fatalf("coordinate %d: %v, the model's %v", j, got[j], want[j])
		}
	}
	if gs.N != ws.N || gs.Clipped != ws.Clipped || math.Abs(gs.Loss-ws.Loss) > 1e-4*math.Abs(ws.Loss) || gs.Correct != ws.Correct {
		t.Errorf("stats %+v, the model's %+v", gs, ws)
	}
}

// Removing any one example from a batch moves the clipped sum by at most C: crafted examples
// (huge inputs, whose every copy has a huge gradient; NaN and Inf inputs) at several positions,
// batches crossing the 32-example chunk, K = 1, 3 and 4.
func TestNeighbouringBatches(t *testing.T) {
	nw := tinyCNN(t)
	np := len(nw.Params())
	const clip = 0.1
	base := randomBatch(41, 72, 3)
	for i := range base.X {
		base.X[i] *= 3
	}
	huge := base.X[5*72 : 6*72]
	for j := range huge {
		huge[j] *= 1e4
	}
	// Central pixels, which no crop of padding ≤ 2 removes.
	base.X[17*72+36+2*6+2] = float32(math.NaN())
	base.X[33*72+3*6+3] = float32(math.Inf(1))
	for _, cfg := range []Config{
		{Multiplicity: 1, CropPadding: 1, Flip: true, Shape: shape},
		{Multiplicity: 3, CropPadding: 2, Shape: shape},
		{Multiplicity: 4, CropPadding: 1, Flip: true, Shape: shape},
	} {
		o, err := New(nw, cfg, [32]byte{3}, zero)
		if err != nil {
			t.Fatal(err)
		}
		full := make([]float32, np)
		st, err := o.ClippedGradSum(base, clip, full, nil)
		if err != nil {
			t.Fatal(err)
		}
		if st.NonFinite != 2 {
			t.Errorf("K = %d: NonFinite = %d, want 2 (the NaN and Inf examples)", cfg.K(), st.NonFinite)
		}
		for _, j := range []int{0, 5, 17, 31, 32, 33, 40} {
			d := data.Batch{X: slices.Concat(base.X[:j*72], base.X[(j+1)*72:]), Y: slices.Concat(base.Y[:j], base.Y[j+1:]), N: base.N - 1}
			less := make([]float32, np)
			if _, err := o.ClippedGradSum(d, clip, less, nil); err != nil {
				t.Fatal(err)
			}
			diff := distance(full, less)
			if diff > clip*(1+1e-5) {
				t.Errorf("K = %d, without example %d: the sum moved by %v > C = %v", cfg.K(), j, diff, clip)
			}
			if (j == 17 || j == 33) && diff > 1e-6 {
				t.Errorf("K = %d, without the non-finite example %d: the sum moved by %v, want 0", cfg.K(), j, diff)
			}
			if j == 5 && diff < clip*0.99 {
				t.Errorf("K = %d, without the huge example: the sum moved by %v, want C = %v (its average is clipped)", cfg.K(), diff, clip)
			}
		}
	}
}

// The augmentations are fixed by the key, the round and the example: the same inputs give
// bit-identical sums on any number of goroutines; another key or another round give others.
func TestReproducible(t *testing.T) {
	nw := tinyCNN(t)
	np := len(nw.Params())
	b := randomBatch(40, 72, 4)
	cfg := Config{Multiplicity: 3, CropPadding: 2, Flip: true, Shape: shape}
	sum := func(key byte, procs int) []float32 {
		defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(procs))
		o, err := New(nw, cfg, [32]byte{key}, zero)
		if err != nil {
			t.Fatal(err)
		}
		g := make([]float32, np)
		if _, err := o.ClippedGradSum(b, 0.1, g, nil); err != nil {
			t.Fatal(err)
		}
		return g
	}
	a := sum(7, 2)
	if !slices.Equal(a, sum(7, 1)) || !slices.Equal(a, sum(7, 4)) {
		t.Error("the same key gave different sums on 1, 2 and 4 goroutines")
	}
	if slices.Equal(a, sum(8, 2)) {
		t.Error("two keys gave the same augmentations")
	}
	var round uint64
	o, _ := New(nw, cfg, [32]byte{7}, func() uint64 { return round })
	k1 := o.callKey()
	round++
	if k1 == o.callKey() {
		t.Error("a new round kept the call key")
	}
	if _, err := New(nw, cfg, [32]byte{7}, nil); err == nil {
		t.Error("New accepted no round function")
	}
}

// With views, K = Views copies are every view once: the clipped sum is Σ_i clip_C of the mean
// of the model's gradients on the example's views, computed here view by view with the model
// itself; with K = 1 each example is one of its views.
func TestViewsAverageEveryView(t *testing.T) {
	nw := tinyCNN(t)
	np := len(nw.Params())
	const clip = 0.05
	for _, v := range []int{2, 3} {
		b := randomBatch(37, v*72, 7) // v views of 72 values per example
		o, err := New(nw, Config{Multiplicity: v, Views: v, Shape: shape}, [32]byte{4}, zero)
		if err != nil {
			t.Fatal(err)
		}
		got := make([]float32, np)
		st, err := o.ClippedGradSum(b, clip, got, nil)
		if err != nil {
			t.Fatal(err)
		}
		want := make([]float64, np)
		for i := range b.N {
			avg := make([]float32, np)
			for j := range v {
				one := data.Batch{X: b.X[(i*v+j)*72 : (i*v+j+1)*72], Y: b.Y[i : i+1], N: 1}
				g := make([]float32, np)
				if _, err := nw.ClippedGradSum(one, math.Inf(1), g, nil); err != nil {
					t.Fatal(err)
				}
				for t, x := range g {
					avg[t] += x / float32(v)
				}
			}
			if _, err := optim.ClipL2(avg, clip); err != nil {
				t.Fatal(err)
			}
			for t, x := range avg {
				want[t] += float64(x)
			}
		}
		for j := range want {
			if math.Abs(float64(got[j])-want[j]) > 1e-5*(1+math.Abs(want[j])) {
				t.Fatalf("%d views: coordinate %d is %v, want %v", v, j, got[j], want[j])
			}
		}
		if st.N != b.N || st.NonFinite != 0 {
			t.Errorf("%d views: stats %+v", v, st)
		}

		// K = 1: each example's gradient is that of one of its views.
		o1, err := New(nw, Config{Multiplicity: 1, Views: v, Shape: shape}, [32]byte{4}, zero)
		if err != nil {
			t.Fatal(err)
		}
		// The views' own gradients, computed before: the model is not safe for use inside its
		// own callback.
		views := make([][]float32, b.N*v)
		for r := range views {
			one := data.Batch{X: b.X[r*72 : (r+1)*72], Y: b.Y[r/v : r/v+1], N: 1}
			views[r] = make([]float32, np)
			if _, err := nw.ClippedGradSum(one, math.Inf(1), views[r], nil); err != nil {
				t.Fatal(err)
			}
		}
		var mu sync.Mutex
		picked := map[int]int{}
		if _, err := o1.PerSampleGradSum(b, func(i int, g []float32) {
			for j := range v {
				if close(views[i*v+j], g) {
					mu.Lock()
					picked[j]++
					mu.Unlock()
					return
				}
			}
			t.Errorf("%d views, K = 1: example %d's gradient is none of its views'", v, i)
		}, make([]float32, np)); err != nil {
			t.Fatal(err)
		}
		if len(picked) != v {
			t.Errorf("%d views, K = 1: views drawn %v, want every view sometimes", v, picked)
		}
	}
}

// Views are the privacy unit's own rows: removing one example (crafted: one huge view, a NaN
// in another view) from a batch crossing the 32-example chunk moves the clipped sum by at most
// C, and by 0 for an example with a non-finite view.
func TestViewsNeighbouringBatches(t *testing.T) {
	nw := tinyCNN(t)
	np := len(nw.Params())
	const clip = 0.1
	const v = 4
	base := randomBatch(41, v*72, 9)
	for j := range 72 {
		base.X[(5*v+2)*72+j] *= 1e4 // example 5: view 2 huge
	}
	base.X[(17*v+3)*72+10] = float32(math.NaN()) // example 17: view 3 NaN
	base.X[(33*v+1)*72+20] = float32(math.Inf(-1))
	for _, k := range []int{1, 2, 4, 6} {
		o, err := New(nw, Config{Multiplicity: k, Views: v, Shape: shape}, [32]byte{5}, zero)
		if err != nil {
			t.Fatal(err)
		}
		full := make([]float32, np)
		if _, err := o.ClippedGradSum(base, clip, full, nil); err != nil {
			t.Fatal(err)
		}
		row := v * 72
		for _, j := range []int{0, 5, 17, 31, 32, 33, 40} {
			d := data.Batch{X: slices.Concat(base.X[:j*row], base.X[(j+1)*row:]), Y: slices.Concat(base.Y[:j], base.Y[j+1:]), N: base.N - 1}
			less := make([]float32, np)
			if _, err := o.ClippedGradSum(d, clip, less, nil); err != nil {
				t.Fatal(err)
			}
			diff := distance(full, less)
			if diff > clip*(1+1e-5) {
				t.Errorf("K = %d, without example %d: the sum moved by %v > C = %v", k, j, diff, clip)
			}
			if k >= v && (j == 17 || j == 33) && diff > 1e-6 {
				t.Errorf("K = %d, without example %d (a non-finite view, always drawn): the sum moved by %v, want 0", k, j, diff)
			}
			if k >= v && j == 5 && diff < clip*0.99 {
				t.Errorf("K = %d, without the example with a huge view: moved by %v, want C", k, diff)
			}
		}
	}
}

// close reports whether a and b agree to float32 rounding of a batched computation.
func close(a, b []float32) bool {
	for j := range a {
		if math.Abs(float64(a[j]-b[j])) > 1e-5*(1+math.Abs(float64(a[j]))) {
			return false
		}
	}
	return len(a) == len(b)
}

// distance is ‖a − b‖ in float64.
func distance(a, b []float32) float64 {
	var sq float64
	for t := range a {
		v := float64(a[t]) - float64(b[t])
		sq += v * v
	}
	return math.Sqrt(sq)
}

// Each example alone, bit for bit, through the augmentation: on real architectures at their
// real sizes, an example's average over its copies (K = 4 crops and flips of a 28×28 image on
// cnn-tramer-boneh; K = 2 of 3 precomputed 81×7×7 feature views on the ScatterNet CNN), its
// draw keyed by the example alone, is the same bits at every slot of a batch that crosses the
// model's 32-sample blocks, and equal to the example's average alone: its copies sit at slots
// K·i … K·i+K−1 of the augmented batch, so any dependence of a copy's gradient on its row
// offset would show here.
func TestCopiesAloneBitForBit(t *testing.T) {
	for _, tc := range []struct {
		name string
		spec models.Spec
		cfg  Config
	}{
		{"cnn-tramer-boneh/crops+flips", models.Spec{Kind: "cnn-tramer-boneh"},
			Config{Multiplicity: 4, Flip: true, CropPadding: 2, Shape: [3]int{1, 28, 28}}},
		{"scatternet-cnn-fmnist/views=3", models.Spec{Kind: "scatternet-cnn-fmnist"},
			Config{Multiplicity: 2, Views: 3, Shape: [3]int{81, 7, 7}}},
	} {
		nw, err := models.New(tc.spec, rand.New(rand.NewPCG(41, 42)))
		if err != nil {
			t.Fatal(err)
		}
		o, err := New(nw, tc.cfg, [32]byte{3}, zero)
		if err != nil {
			t.Fatal(err)
		}
		const n = 40
		d := tc.cfg.Row()
		rng := rand.New(rand.NewPCG(43, 44))
		fill := data.Batch{X: make([]float32, n*d), Y: make([]int32, n), N: n}
		for i := range fill.X {
			fill.X[i] = float32(rng.Float64())
		}
		for i := range fill.Y {
			fill.Y[i] = int32(rng.IntN(10))
		}
		x := make([]float32, d)
		for j := range x {
			x[j] = float32(rng.Float64())
		}
		np := len(nw.Params())
		average := func(b data.Batch, at int) []float32 {
			var g []float32
			if _, err := o.PerSampleGradSum(b, func(i int, v []float32) {
				if i == at {
					g = append([]float32(nil), v...)
				}
			}, make([]float32, np)); err != nil {
				t.Fatal(err)
			}
			if g == nil {
				t.Fatalf("%s: no average passed for example %d", tc.name, at)
			}
			return g
		}
		alone := average(data.Batch{X: x, Y: []int32{3}, N: 1}, 0)
		for _, s := range []int{0, 1, 5, 6, 8, 12, 31, n} {
			b := data.Batch{X: slices.Concat(fill.X[:s*d], x, fill.X[s*d:]), Y: slices.Concat(fill.Y[:s], []int32{3}, fill.Y[s:]), N: n + 1}
			got := average(b, s)
			for k := range got {
				if math.Float32bits(got[k]) != math.Float32bits(alone[k]) {
					t.Errorf("%s: slot %d: the example's averaged gradient differs from its own alone at coordinate %d (%v against %v)",
						tc.name, s, k, got[k], alone[k])
					break
				}
			}
		}
	}
}
