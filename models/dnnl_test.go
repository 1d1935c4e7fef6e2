package models_test

import (
	"math/rand/v2"
	"runtime"
	"strings"
	"testing"

	"github.com/dptrain/dptrain/data"
	. "github.com/dptrain/dptrain/models"
	"github.com/dptrain/dptrain/models/graph"
)

// skipWithoutDNNL skips a test of engine dnnl in a binary built without the dnnl tag.
func skipWithoutDNNL(t *testing.T) {
	t.Helper()
	if !DNNLBuilt {
		t.Skip("oneDNN not built in: apt-get install libdnnl-dev, then go test -tags \"openblas dnnl\" (make picks the tag when the library is installed)")
	}
}

// TestDNNLMatchesGraph is TestDirectMatchesGraph on engine dnnl: the direct executor with its
// convolutions (forward, backward data, backward weights; every kernel size, stride and padding
// of directSpecs, 1×1 projections, residual gradients added to one buffer) on oneDNN agrees
// with the gorgonia graph to float32 rounding.
func TestDNNLMatchesGraph(t *testing.T) {
	skipWithoutDNNL(t)
	testMatchesGraph(t, "dnnl")
}

// TestDNNLEngine checks what engine dnnl builds: the direct executor with oneDNN primitives,
// one set per distinct convolution shape, named by Engine; and, without the dnnl tag, an error
// that says how to get it.
func TestDNNLEngine(t *testing.T) {
	cases := []struct {
		kind   string
		shapes int // distinct conv shapes
	}{
		{"cnn-tramer-boneh", 2},
		// conv1; 3 stages of 3×3 convs at stride 1, a strided 3×3 and a 1×1 projection for
		// stages 2 and 3.
		{"resnet20-gn", 1 + 1 + 3 + 3},
	}
	for _, tc := range cases {
		nw, err := graph.New(Spec{Kind: tc.kind, Engine: "dnnl"}, rand.New(rand.NewPCG(1, 2)))
		if !DNNLBuilt {
			if err == nil || !strings.Contains(err.Error(), "apt-get install libdnnl-dev") {
				t.Errorf("%s: engine dnnl without the dnnl tag: got %v, want the install command", tc.kind, err)
			}
			continue
		}
		if err != nil {
			t.Fatalf("%s: %v", tc.kind, err)
		}
		if nw.Engine() != "dnnl" {
			t.Errorf("%s: Engine() = %q, want dnnl", tc.kind, nw.Engine())
		}
		if got := len(nw.DNNLImpl()); got != tc.shapes {
			t.Errorf("%s: %d primitive sets, want one per distinct shape, %d: %q", tc.kind, got, tc.shapes, nw.DNNLImpl())
		}
	}
}

// TestDNNLFreedWithNetwork builds and drops networks on engine dnnl and collects them, so that
// their primitives, memory objects and buffers are freed (runtime.AddCleanup), while a live
// network of the same shapes keeps computing the same clipped sum.
func TestDNNLFreedWithNetwork(t *testing.T) {
	skipWithoutDNNL(t)
	var spec Spec // resnet-mini: 3×3, strided and 1×1 convolutions
	for _, tc := range directSpecs {
		if tc.name == "resnet-mini" {
			spec = tc.spec
		}
	}
	spec.Engine = "dnnl"
	sum := func(nw *Network, b data.Batch) []float32 {
		g := make([]float32, len(nw.Params()))
		if _, err := nw.ClippedGradSum(b, 1, g, nil); err != nil {
			t.Fatal(err)
		}
		return g
	}
	keep, err := graph.New(spec, rand.New(rand.NewPCG(3, 4)))
	if err != nil {
		t.Fatal(err)
	}
	b := randomBatch(rand.New(rand.NewPCG(5, 6)), keep, 9)
	want := sum(keep, b)
	for range 20 {
		nw, err := graph.New(spec, rand.New(rand.NewPCG(3, 4)))
		if err != nil {
			t.Fatal(err)
		}
		sum(nw, b)
		runtime.GC()
	}
	runtime.GC()
	if got := sum(keep, b); diffNorm(got, want) != 0 {
		t.Errorf("clipped sum changed after other networks were freed: ‖Δ‖ = %g", diffNorm(got, want))
	}
}
