package kernels

import (
	"errors"
	"fmt"
	"math"

	"gonum.org/v1/gonum/blas"
	"gonum.org/v1/gonum/blas/blas32"
	"gonum.org/v1/gonum/mat"

	"github.com/dptrain/dptrain/data"
	"github.com/dptrain/dptrain/layer"
)

// The block problems of a lifted MLP (Chen & Liu; package models/lifted builds them) and the
// two data-dependent maps DP-MBCD applies to them. Error messages keep the "lifted:" prefix of
// the package that exports these for the lifted model.

// BlockGradient writes into gw (In×Out) the sum over the n examples of the per-example
// gradients g_i = x_i (x_i W − t_i) (row form of (W_d x_i − u_i) x_iᵀ, Lemma B.1 with the
// sign corrected) each clipped to l2 norm ≤ clip: Σ_i min(1, clip/‖g_i‖)·g_i, with the shared
// ghost-clipping kernels (‖g_i‖ = ‖x_i‖·‖x_i W − t_i‖; no g_i is materialised). in is n×In,
// target n×Out, w In×Out, all row-major. It returns how many examples were clipped. An example
// whose norm is not finite is clipped to zero, not an error (ClippedBlockGradient counts them).
// buf is scratch space, returned grown.
func BlockGradient(gw, w, in, target []float32, n, nIn, nOut int, clip float64, buf []float32) (int, []float32, error) {
	st, buf, err := ClippedBlockGradient(gw, w, in, target, n, nIn, nOut, clip, buf)
	return st.Clipped, buf, err
}

// ClippedBlockGradient is BlockGradient returning the counts as data.Stats: N examples,
// Clipped of them above the clip norm, and NonFinite of them whose per-example norm was NaN or
// infinite and which were clipped to zero (ClipScale): they add nothing to gw, so the
// function is total and removing such an example moves the sum by 0 ≤ C. NonFinite is an
// operator-only metric. Errors are for buffers of the wrong size or a non-positive clip only.
func ClippedBlockGradient(gw, w, in, target []float32, n, nIn, nOut int, clip float64, buf []float32) (data.Stats, []float32, error) {
	if len(gw) != nIn*nOut {
		return data.Stats{N: n}, buf, fmt.Errorf("lifted: block gradient buffer of %d values for a %d×%d block", len(gw), nIn, nOut)
	}
	g, sq, scale := make([]float32, max(n, 0)*nOut), make([]float64, max(n, 0)), make([]float32, max(n, 0))
	st, buf, err := BlockPerExample(g, sq, scale, w, in, target, n, nIn, nOut, clip, buf)
	if err != nil {
		return st, buf, err
	}
	clear(gw)
	buf, err = ScaledSum(gw, nil, in, g, scale, layer.Geometry{Rows: 1, In: nIn, Out: nOut}, buf)
	return st, buf, err
}

// BlockPerExample computes what each of the n examples contributes to ClippedBlockGradient's
// sum: its residual row g_i = x_i W − t_i into g (n×nOut, row-major), the squared norm
// ‖x_i‖²‖g_i‖² of its gradient x_iᵀg_i into sq (len n) and its clip factor (ClipScale) into
// scale (len n); it returns the counts as ClippedBlockGradient does. buf is scratch space,
// returned grown.
func BlockPerExample(g []float32, sq []float64, scale []float32, w, in, target []float32, n, nIn, nOut int, clip float64, buf []float32) (data.Stats, []float32, error) {
	st := data.Stats{N: n}
	if n < 0 || len(g) != n*nOut || len(sq) != n || len(scale) != n || len(w) != nIn*nOut || len(in) < n*nIn || len(target) < n*nOut {
		return st, buf, fmt.Errorf("lifted: block gradient buffers (%d, %d, %d, %d, %d, %d) for %d examples of a %d×%d block", len(g), len(sq), len(scale), len(w), len(in), len(target), n, nIn, nOut)
	}
	if !(clip > 0) {
		return st, buf, fmt.Errorf("lifted: clip norm %v: want > 0 (+Inf: none)", clip)
	}
	// G = X W − T one example at a time: g_i = Wᵀx_i − t_i, one gemv of the same shape per
	// example. One GEMM over the batch would give an example's row with arithmetic that depends
	// on the row's offset in the batch (OpenBLAS's kernels take different paths for different
	// row offsets), so its norm and clip factor would depend on its slot and neighbours.
	copy(g, target[:n*nOut])
	wg := blas32.General{Rows: nIn, Cols: nOut, Stride: nOut, Data: w}
	for i := range n {
		blas32.Gemv(blas.Trans, 1, wg, blas32.Vector{N: nIn, Inc: 1, Data: in[i*nIn : (i+1)*nIn]},
			-1, blas32.Vector{N: nOut, Inc: 1, Data: g[i*nOut : (i+1)*nOut]})
	}
	clear(sq)
	var err error
	if buf, err = SquaredNorms(sq, in, g, layer.Geometry{Rows: 1, In: nIn, Out: nOut}, buf); err != nil {
		return st, buf, err
	}
	for i, v := range sq {
		f, clipped, bad := ClipScale(clip, math.Sqrt(v))
		scale[i] = f
		if clipped {
			st.Clipped++
		}
		if bad {
			st.NonFinite++
		}
	}
	return st, buf, nil
}

// ProximalSolve replaces w (In×Out, row-major) by (I + c·XᵀX)⁻¹ w, X the n×In block inputs:
// the data-dependent map of the implicit W-update (Chen & Liu's Eq. 17 with its sign
// typos corrected), by Cholesky of the In×In SPD matrix.
func ProximalSolve(w, in []float32, n, nIn, nOut int, c float64) error {
	if len(w) != nIn*nOut || len(in) < n*nIn || !(c >= 0) {
		return fmt.Errorf("lifted: proximal solve of a %d×%d block from %d values with %d examples (c = %v)", nIn, nOut, len(w), n, c)
	}
	x := denseF64(in[:n*nIn], n, nIn)
	var sys mat.SymDense
	sys.SymOuterK(c, x.T()) // c·XᵀX
	for i := 0; i < nIn; i++ {
		sys.SetSym(i, i, sys.At(i, i)+1)
	}
	var chol mat.Cholesky
	if !chol.Factorize(&sys) {
		return errors.New("lifted: I + c·XᵀX is not positive definite (non-finite block inputs?)")
	}
	var sol mat.Dense
	if err := chol.SolveTo(&sol, denseF64(w, nIn, nOut)); err != nil {
		return fmt.Errorf("lifted: proximal solve: %w", err)
	}
	for i := 0; i < nIn; i++ {
		for j := 0; j < nOut; j++ {
			v := sol.At(i, j)
			if math.IsNaN(v) || math.IsInf(v, 0) {
				return errors.New("lifted: the proximal solve gave a non-finite weight")
			}
			w[i*nOut+j] = float32(v)
		}
	}
	return nil
}

// denseF64 is the r×c matrix of w in float64.
func denseF64(w []float32, r, c int) *mat.Dense {
	v := make([]float64, len(w))
	for i, f := range w {
		v[i] = float64(f)
	}
	return mat.NewDense(r, c, v)
}
