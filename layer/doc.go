// Package layer describes a network's structure as the algorithms read it without running
// it: where each parameter tensor lies in the flat parameter vector (Param), the geometry of a
// dense or conv layer's per-example blocks (Geometry, which the ghost-clipping kernels take),
// and the forward-only view of a network that DP-ULR's estimators use (Linear, Trace). It
// imports nothing, so that the models, the optimizers and the algorithms can all share it.
package layer
