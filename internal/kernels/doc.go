// Package kernels holds the per-example numerical kernels that the models, the optimizers and
// the algorithms share: ghost-clipping squared norms and scaled sums of a dense or conv layer
// (SquaredNorms, ScaledSum, on a layer.Geometry), float64 sums of squares, the clipping
// factor, the block gradients and proximal steps of a lifted MLP that DP-MBCD solves
// (BlockGradient, ProximalSolve), DenseRows, a dense product whose every element is computed
// the same way whichever rows share the call (amd64 assembly with AVX2 and FMA, 32 columns at a
// time on AVX-512 with the same bits), so that one example's activations never depend on its
// slot in a batch, and the direct executor's per-channel and element-wise passes (GroupNorm's
// ChanSum … ChanAffineDiff, ReLU, Add, AddScaled64, and max pooling's MaxPairs and MaxRows:
// amd64 assembly that gives the scalar loops' bits).
//
// It sits below both package models and package optim and imports neither, nor gorgonia:
// optim calls these kernels without depending on a model implementation. Float32 and float64
// BLAS calls go through gonum's blas32 and blas64, whose implementation package models selects
// (OpenBLAS with the openblas build tag).
package kernels
