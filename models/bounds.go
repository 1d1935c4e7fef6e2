package models

import "fmt"

// maxActivation bounds the number of values one sample occupies at any point of the forward
// pass (the input, every op's output and every conv layer's im2col patches): 2^26 float32s
// (256 MiB) per sample, far above every architecture dptrain ships (CIFAR-10's ResNet-20 uses
// under 2^17). A spec beyond it is refused before any memory is allocated for it.
const maxActivation = 1 << 26

// checkSizes refuses a plan whose per-sample activations exceed maxActivation or whose
// parameter count exceeds maxParams. Products are taken in float64 so that crafted shapes
// cannot overflow int.
func (p *plan) checkSizes(input []int, maxParams int) error {
	size := func(s []int) float64 {
		v := 1.0
		for _, d := range s {
			v *= float64(d)
		}
		return v
	}
	if v := size(input); v > maxActivation {
		return fmt.Errorf("models: an input of shape %v (%.3g values per sample) exceeds the %d this build accepts", input, v, maxActivation)
	}
	for _, o := range p.ops {
		if v := size(o.Out); v > maxActivation {
			return fmt.Errorf("models: a layer output of shape %v (%.3g values per sample) exceeds the %d this build accepts", o.Out, v, maxActivation)
		}
	}
	var params float64
	for _, l := range p.layout {
		params += size(l.Shape)
	}
	for _, l := range p.layers {
		if v := float64(l.rows()) * float64(l.d); l.kind == kindConv && v > maxActivation {
			return fmt.Errorf("models: layer %s unfolds to %.3g values per sample, more than the %d this build accepts", l.name, v, maxActivation)
		}
	}
	if params > float64(maxParams) {
		return fmt.Errorf("models: the spec needs %.3g parameters, more than the %d allowed here", params, maxParams)
	}
	return nil
}
