package models

import (
	"bytes"
	"math/rand/v2"
	"testing"
)

// FuzzReadParams: any bytes give a network or an error, never a panic or an allocation the
// file's size does not justify; a network read writes back to a file that reads the same.
func FuzzReadParams(f *testing.F) {
	rng := rand.New(rand.NewPCG(1, 2))
	for _, s := range []Spec{
		{Kind: "logreg", Input: []int{4}, Classes: 3},
		{Kind: "mlp", Input: []int{5}, Hidden: []int{3}, Classes: 2},
		{Kind: "cnn", Input: []int{1, 6, 6}, Classes: 2, Layers: []LayerSpec{{Type: "conv2d", Out: 2, Kernel: 3}, {Type: "relu"}, {Type: "flatten"}, {Type: "dense", Out: 2}}},
	} {
		nw, err := New(s, rng)
		if err != nil {
			f.Fatal(err)
		}
		nw.SetPreprocessing(map[string]string{"data.dataset": "mnist"})
		var b bytes.Buffer
		if err := nw.WriteParams(&b); err != nil {
			f.Fatal(err)
		}
		f.Add(b.Bytes())
	}
	f.Add(craft(`{"kind":"mlp","hidden":[100000000]}`, 0, 0))
	f.Fuzz(func(t *testing.T, b []byte) {
		nw, err := ReadParams(bytes.NewReader(b))
		if err != nil {
			return
		}
		var out bytes.Buffer
		if err := nw.WriteParams(&out); err != nil {
			t.Fatal(err)
		}
		again, err := ReadParams(&out)
		if err != nil {
			t.Fatalf("a network read from a file does not read back: %v", err)
		}
		p, q := nw.Params(), again.Params()
		if len(p) != len(q) {
			t.Fatalf("%d parameters read back as %d", len(p), len(q))
		}
		for i := range p {
			if p[i] != q[i] && p[i] == p[i] {
				t.Fatalf("parameter %d: %v read back as %v", i, p[i], q[i])
			}
		}
	})
}
