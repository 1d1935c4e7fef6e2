package models

// What the external tests (package models_test, which build networks with the graph engine of
// package models/graph) read of the direct executor.

const (
	DirectBlock = directBlock
	DNNLBuilt   = dnnlBuilt
)

// Preset is the spec of the named preset.
func Preset(name string) (Spec, bool) { return preset(name) }

// InDim is the number of values of one example.
func (nw *Network) InDim() int { return nw.inDim }

// HasDirect reports whether the network has a direct executor.
func (nw *Network) HasDirect() bool { return nw.dr != nil }

// BlockSize is the number of samples the direct executor carries through a step at a time.
func (nw *Network) BlockSize() int { return nw.dr.block }

// DirectFMA reports whether the direct executor's dense layers run kernels.DenseRows, and
// SetDirectFMA chooses it.
func (nw *Network) DirectFMA() bool      { return nw.dr.fma }
func (nw *Network) SetDirectFMA(on bool) { nw.dr.fma = on }

// DNNLImpl names the oneDNN primitive sets of the direct executor's conv layers.
func (nw *Network) DNNLImpl() []string { return nw.dr.dn.impl() }

// RefuseStandardised and ForwardOnlyCovered are the refusals of the forward-only passes.
func (nw *Network) RefuseStandardised() error { return nw.refuseStandardised() }
func (nw *Network) ForwardOnlyCovered() error { return nw.forwardOnlyCovered() }

// LayerWS is a parameter layer's name, whether it is a conv layer and whether its weights are
// standardised.
type LayerWS struct {
	Name     string
	Conv, WS bool
}

// LayersWS lists the parameter layers' LayerWS.
func (nw *Network) LayersWS() []LayerWS {
	out := make([]LayerWS, len(nw.plan.layers))
	for j, l := range nw.plan.layers {
		out[j] = LayerWS{l.name, l.kind == kindConv, l.ws}
	}
	return out
}
