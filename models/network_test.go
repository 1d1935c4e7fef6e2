package models_test

import (
	"bytes"
	"encoding/binary"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/dptrain/dptrain/data"
	. "github.com/dptrain/dptrain/models"
	"github.com/dptrain/dptrain/models/graph"
	"github.com/dptrain/dptrain/models/internal/core"
)

func TestSpecErrors(t *testing.T) {
	for _, tc := range []struct {
		name string
		spec Spec
		want string
	}{
		{"unknown kind", Spec{Kind: "transformer"}, "unknown model kind"},
		{"bad activation", Spec{Kind: "mlp", Hidden: []int{3}, Activation: "sigmoid"}, "activation"},
		{"no layers", Spec{Kind: "cnn", Input: []int{1, 4, 4}, Classes: 2}, "no layers"},
		{"no input", Spec{Kind: "cnn", Classes: 2, Layers: []LayerSpec{{Type: "dense", Out: 2}}}, "no input shape"},
		{"last not classes", Spec{Kind: "cnn", Input: []int{4}, Classes: 3, Layers: []LayerSpec{{Type: "dense", Out: 2}}}, "last layer"},
		{"groups", Spec{Kind: "cnn", Input: []int{3, 4, 4}, Classes: 2, Layers: []LayerSpec{{Type: "groupnorm", Groups: 2}, {Type: "dense", Out: 2}}}, "do not divide"},
		{"kernel too big", Spec{Kind: "cnn", Input: []int{1, 4, 4}, Classes: 2, Layers: []LayerSpec{{Type: "conv2d", Out: 2, Kernel: 5}, {Type: "dense", Out: 2}}}, "larger than"},
		{"batchnorm", Spec{Kind: "cnn", Input: []int{1, 4, 4}, Classes: 2, Layers: []LayerSpec{{Type: "batchnorm"}, {Type: "dense", Out: 2}}}, "unknown type"},
		{"add without save", Spec{Kind: "cnn", Input: []int{1, 4, 4}, Classes: 2, Layers: []LayerSpec{{Type: "add"}, {Type: "dense", Out: 2}}}, "no saved tensor"},
		{"save without add", Spec{Kind: "cnn", Input: []int{1, 4, 4}, Classes: 2, Layers: []LayerSpec{{Type: "save"}, {Type: "dense", Out: 2}}}, "no matching add"},
		{"skip shapes differ", Spec{Kind: "cnn", Input: []int{1, 4, 4}, Classes: 2, Layers: []LayerSpec{{Type: "save"},
			{Type: "conv2d", Out: 2, Kernel: 3, Padding: 1}, {Type: "add"}, {Type: "dense", Out: 2}}}, "equal shapes"},
		{"conv on vector", Spec{Kind: "cnn", Input: []int{16}, Classes: 2, Layers: []LayerSpec{{Type: "conv2d", Out: 2, Kernel: 1}, {Type: "dense", Out: 2}}}, "C×H×W"},
	} {
		_, err := graph.New(tc.spec, rand.New(rand.NewPCG(1, 1)))
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: error %v, want one containing %q", tc.name, err, tc.want)
		}
	}
}

// TestPresets builds every preset, checks its parameter count against the count worked out by
// hand from the architecture, and runs a private step on a small batch.
func TestPresets(t *testing.T) {
	convP := func(c, k, out int, bias bool) int {
		n := c * k * k * out
		if bias {
			n += out
		}
		return n
	}
	resnet := convP(3, 3, 16, false) + 2*16 // stem conv + GN
	in := 16
	for _, ch := range []int{16, 32, 64} {
		for blk := 0; blk < 3; blk++ {
			resnet += convP(in, 3, ch, false) + 2*ch + convP(ch, 3, ch, false) + 2*ch
			if in != ch {
				resnet += convP(in, 1, ch, false) + 2*ch
			}
			in = ch
		}
	}
	resnet += 64*10 + 10
	for _, tc := range []struct {
		name   string
		params int
	}{
		// 16@8×8 on 1 channel; 32@4×4 on 16; dense 32·4·4 → 32; dense 32 → 10.
		{"cnn-tramer-boneh", (64*16 + 16) + (16*16*32 + 32) + (512*32 + 32) + (32*10 + 10)},
		{"lenet5", (25*6 + 6) + (6*25*16 + 16) + (400*120 + 120) + (120*84 + 84) + (84*10 + 10)},
		{"mlp-784-128-64-32-10", (784*128 + 128) + (128*64 + 64) + (64*32 + 32) + (32*10 + 10)},
		{"resnet20-gn", resnet},
	} {
		rng := rand.New(rand.NewPCG(3, 3))
		nw, err := graph.New(Spec{Kind: tc.name}, rng)
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		if got := len(nw.Params()); got != tc.params {
			t.Errorf("%s: %d parameters, want %d", tc.name, got, tc.params)
		}
		b := randomBatch(rng, nw, 3)
		grad := make([]float32, len(nw.Params()))
		norms := make([]float64, 3)
		st, err := nw.ClippedGradSum(b, 0.1, grad, norms)
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		if st.N != 3 || math.IsNaN(st.Loss) || norm2(grad) > 3*0.1*(1+1e-5) {
			t.Errorf("%s: stats %+v, ‖grad‖ = %g exceeds 3 × clip", tc.name, st, norm2(grad))
		}
		for _, v := range norms {
			if !(v > 0) || math.IsInf(v, 0) {
				t.Errorf("%s: per-sample norm %g", tc.name, v)
			}
		}
	}
}

func TestLayoutCoversParams(t *testing.T) {
	for _, tc := range tinySpecs {
		nw, err := graph.New(tc.spec, rand.New(rand.NewPCG(1, 1)))
		if err != nil {
			t.Fatal(err)
		}
		off := 0
		for _, pi := range nw.Layout() {
			if pi.Offset != off || pi.Size != core.Prod(pi.Shape) {
				t.Errorf("%s: %s at %d size %d shape %v; want offset %d", tc.name, pi.Name, pi.Offset, pi.Size, pi.Shape, off)
			}
			off += pi.Size
		}
		if off != len(nw.Params()) {
			t.Errorf("%s: layout covers %d of %d parameters", tc.name, off, len(nw.Params()))
		}
	}
}

// TestInitialisation checks the empirical spread of the weights against He (relu layers) and
// Glorot uniform (the output layer) variances.
func TestInitialisation(t *testing.T) {
	nw, err := graph.New(Spec{Kind: "mlp", Input: []int{400}, Classes: 10, Hidden: []int{300}}, rand.New(rand.NewPCG(5, 5)))
	if err != nil {
		t.Fatal(err)
	}
	for _, pi := range nw.Layout() {
		if pi.Bias {
			for _, v := range nw.Params()[pi.Offset : pi.Offset+pi.Size] {
				if v != 0 {
					t.Fatalf("%s: bias not zero", pi.Name)
				}
			}
			continue
		}
		w := nw.Params()[pi.Offset : pi.Offset+pi.Size]
		variance := SumSquares(w) / float64(len(w))
		want := 2.0 / 400 // He, fan_in 400
		if pi.Shape[1] == 10 {
			want = 2.0 / (300 + 10) // Glorot uniform: lim²/3 = 2/(fan_in+fan_out)
		}
		if math.Abs(variance/want-1) > 0.05 {
			t.Errorf("%s: weight variance %g, want %g", pi.Name, variance, want)
		}
	}
}

func TestEmptyBatchAndErrors(t *testing.T) {
	nw, err := graph.New(tinySpecs[2].spec, rand.New(rand.NewPCG(1, 1)))
	if err != nil {
		t.Fatal(err)
	}
	grad := make([]float32, len(nw.Params()))
	for i := range grad {
		grad[i] = 1
	}
	st, err := nw.ClippedGradSum(data.Batch{}, 1, grad, nil)
	if err != nil || st != (data.Stats{}) || norm2(grad) != 0 {
		t.Errorf("N = 0: stats %+v, err %v, ‖grad‖ %g; want zeros", st, err, norm2(grad))
	}
	grad[0] = 1
	st, err = nw.PerSampleGradSum(data.Batch{}, nil, grad)
	if err != nil || st != (data.Stats{}) || norm2(grad) != 0 {
		t.Errorf("PerSampleGradSum N = 0: stats %+v, err %v, ‖grad‖ %g; want zeros", st, err, norm2(grad))
	}
	b := randomBatch(rand.New(rand.NewPCG(2, 2)), nw, 2)
	for _, tc := range []struct {
		name string
		call func() error
	}{
		{"zero clip", func() error { _, err := nw.ClippedGradSum(b, 0, grad, nil); return err }},
		{"NaN clip", func() error { _, err := nw.ClippedGradSum(b, math.NaN(), grad, nil); return err }},
		{"short grad", func() error { _, err := nw.ClippedGradSum(b, 1, grad[:3], nil); return err }},
		{"short norms", func() error { _, err := nw.ClippedGradSum(b, 1, grad, make([]float64, 1)); return err }},
		{"bad label", func() error {
			bb := b
			bb.Y = []int32{0, 7}
			_, err := nw.Evaluate(bb)
			return err
		}},
		{"short X", func() error {
			bb := b
			bb.X = bb.X[:3]
			_, err := nw.Evaluate(bb)
			return err
		}},
	} {
		if tc.call() == nil {
			t.Errorf("%s: no error", tc.name)
		}
	}
}

func TestEvaluatePredict(t *testing.T) {
	rng := rand.New(rand.NewPCG(9, 9))
	spec := tinySpecs[5].spec
	spec.Chunk = 4
	nw, err := graph.New(spec, rng)
	if err != nil {
		t.Fatal(err)
	}
	b := randomBatch(rng, nw, 7)
	pred := make([]int32, 7)
	if err := nw.Predict(b, pred); err != nil {
		t.Fatal(err)
	}
	st, err := nw.Evaluate(b)
	if err != nil {
		t.Fatal(err)
	}
	// Reference: each example alone, its loss and gradient from the reference graph.
	var loss float64
	correct := 0
	g := make([]float32, len(nw.Params()))
	for i := 0; i < 7; i++ {
		l, err := nw.ReferenceGrad(b.X[i*nw.InDim():(i+1)*nw.InDim()], b.Y[i], g)
		if err != nil {
			t.Fatal(err)
		}
		loss += l
		if pred[i] == b.Y[i] {
			correct++
		}
	}
	if st.N != 7 || st.Correct != correct || math.Abs(st.Loss-loss) > 1e-5*loss {
		t.Errorf("Evaluate %+v, want N=7 Correct=%d Loss=%g", st, correct, loss)
	}
}

func TestSaveLoad(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "model.params")
	rng := rand.New(rand.NewPCG(4, 4))
	nw, err := graph.New(tinySpecs[7].spec, rng)
	if err != nil {
		t.Fatal(err)
	}
	if err := Save(path, nw); err != nil {
		t.Fatal(err)
	}
	got, err := graph.Load(path)
	if err != nil {
		t.Fatal(err)
	}
	if !equalF32(got.Params(), nw.Params()) || got.Name() != nw.Name() {
		t.Fatal("loaded parameters differ from saved")
	}
	b := randomBatch(rng, nw, 3)
	s1, _ := nw.Evaluate(b)
	s2, _ := got.Evaluate(b)
	if s1 != s2 {
		t.Errorf("loaded model evaluates to %+v, saved %+v", s2, s1)
	}
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 1 {
		t.Errorf("temporary files left behind: %v", entries)
	}
	flip := append([]byte(nil), raw...)
	flip[len(flip)-40] ^= 1 // a parameter byte
	other, _ := graph.New(tinySpecs[6].spec, rng)
	var wrongCount bytes.Buffer
	other.WriteParams(&wrongCount)
	badCount := append([]byte(nil), raw...)
	badCount[16+int(binary.LittleEndian.Uint32(raw[12:16]))]++
	for _, tc := range []struct {
		name string
		data []byte
		want string
	}{
		{"count", badCount, "header promises 156 parameters"},
		{"corrupt", flip, "checksum"},
		{"truncated", raw[:len(raw)-10], "truncated or corrupt"},
		{"magic", append([]byte("NOTMODEL"), raw[8:]...), "not a dptrain parameter file"},
	} {
		_, err := graph.ReadParams(bytes.NewReader(tc.data))
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: error %v, want %q", tc.name, err, tc.want)
		}
	}
	if _, err := graph.ReadParams(&wrongCount); err != nil {
		t.Errorf("reading another valid file: %v", err)
	}
}

func equalF32(a, b []float32) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// TestBLASKernel checks that the binary names the kernels its BLAS runs on this CPU.
func TestBLASKernel(t *testing.T) {
	if k := BLASKernel(); k == "" || (BLAS() == "gonum") != (k == "go") {
		t.Errorf("BLASKernel() = %q with BLAS %s", k, BLAS())
	}
}
