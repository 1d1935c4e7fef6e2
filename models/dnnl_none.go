//go:build !dnnl

package models

import "errors"

const dnnlBuilt = false

// DNNL names the oneDNN library this binary links ("oneDNN 2.6.3"), or "" when it was built
// without the dnnl tag.
func DNNL() string { return "" }

// errNoDNNL is engine dnnl's error in a binary built without the dnnl tag.
var errNoDNNL = errors.New("models: engine dnnl needs oneDNN: apt-get install libdnnl-dev, then build with -tags dnnl (make picks it when the library is installed)")

// dnnlConvs stands in for the oneDNN convolutions of dnnl.go; without the dnnl tag no value
// of it is ever made, and its methods are never called.
type dnnlConvs struct{}

// dnnlWork stands in for a worker's oneDNN state.
type dnnlWork struct{}

func newDnnlConvs(*direct) (*dnnlConvs, error)  { return nil, errNoDNNL }
func (*dnnlConvs) impl() []string               { return nil }
func (*dnnlConvs) worker() (*dnnlWork, error)   { return nil, errNoDNNL }
func (*dnnlConvs) refresh(int, []float32) error { return errNoDNNL }
func (*dnnlConvs) forward(int, *dnnlWork, []float32, []float32, []float32) error {
	return errNoDNNL
}
func (*dnnlConvs) backwardData(int, *dnnlWork, []float32, []float32, []float32) error {
	return errNoDNNL
}
func (*dnnlConvs) backwardWeights(int, *dnnlWork, []float32, []float32, []float32) error {
	return errNoDNNL
}
