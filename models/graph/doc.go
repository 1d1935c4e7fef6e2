// Package graph is the graph engine of package models: it runs a models.Network's passes as
// gorgonia graphs (one compiled tape per batch size and mode, with custom ops for pooling,
// GroupNorm, im2col, the row-local loss head and per-example products). It is the reference
// the direct executor is tested against, the engine of gelu networks and of engine graph, and
// the provider of forward-only traces, resumed passes and ReferenceGrad; New, ReadParams and
// Load build networks that have it.
package graph
