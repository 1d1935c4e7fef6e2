package models

import (
	"fmt"

	"gonum.org/v1/gonum/blas"
	"gonum.org/v1/gonum/blas/blas32"
)

// The per-example clipping kernels of ghost clipping (see ghost.go for the identities), as
// plain functions on a parameter layer's input A, the gradient G of the summed loss with
// respect to its output, and the layer's geometry. Network's ClippedGradSum uses them; an
// optimizer that computes A and G without a gorgonia backward pass (DP-MBCD's lifted layers,
// DP-ULR's likelihood-ratio estimates) clips per example with the same code.

// LayerGeometry is the shape of a parameter layer's per-example blocks of A and G.
type LayerGeometry struct {
	// Rows is how many rows each example contributes: 1 for a dense layer, the number of
	// output positions (oh·ow) for a conv layer, whose A rows are im2col patches.
	Rows int
	// In is the width of A (dense: input features; conv: patch size C·kh·kw) and Out the
	// width of G (dense: outputs; conv: output channels); the weight is In×Out.
	In, Out int
	// Bias says the layer has a bias, whose per-example gradient is the column sum of G_i.
	Bias bool
}

// check returns an error unless a and g hold m examples of geometry geo.
func (geo LayerGeometry) check(a, g []float32, m int) error {
	if geo.Rows <= 0 || geo.In <= 0 || geo.Out <= 0 {
		return fmt.Errorf("models: layer geometry %+v: rows, in and out must be positive", geo)
	}
	if len(a) < m*geo.Rows*geo.In || len(g) < m*geo.Rows*geo.Out {
		return fmt.Errorf("models: %d examples of geometry %+v need len(A) ≥ %d and len(G) ≥ %d, got %d and %d",
			m, geo, m*geo.Rows*geo.In, m*geo.Rows*geo.Out, len(a), len(g))
	}
	return nil
}

// useGram reports whether the Gram identity is cheaper than materialising P_iᵀG_i.
func (geo LayerGeometry) useGram() bool {
	return geo.Rows*(geo.In+geo.Out) < 2*geo.In*geo.Out
}

// SquaredNorms adds to sq[i], for each of the m = len(sq) examples, the squared l2 norm of
// example i's gradient of the layer's weight (and bias): ‖a_i‖²‖g_i‖² (+ ‖g_i‖²) for a dense
// layer, ‖P_iᵀG_i‖² (+ ‖G_iᵀ1‖²) for a conv layer, by the Gram identity or one product per
// example, whichever is cheaper. A is (m·Rows)×In and G (m·Rows)×Out, row-major. buf is
// scratch space, reused when large enough; the (possibly grown) buffer is returned.
func SquaredNorms(sq []float64, a, g []float32, geo LayerGeometry, buf []float32) ([]float32, error) {
	m := len(sq)
	if err := geo.check(a, g, m); err != nil {
		return buf, err
	}
	r, d, k := geo.Rows, geo.In, geo.Out
	switch {
	case r == 1:
		for i := range m {
			gg := sumSq(g[i*k : (i+1)*k])
			sq[i] += sumSq(a[i*d:(i+1)*d]) * gg
			if geo.Bias {
				sq[i] += gg
			}
		}
		return buf, nil
	case geo.useGram():
		buf = grow(buf, 2*r*r)
		pp := blas32.Symmetric{Uplo: blas.Upper, N: r, Stride: r, Data: buf[:r*r]}
		gg := blas32.Symmetric{Uplo: blas.Upper, N: r, Stride: r, Data: buf[r*r : 2*r*r]}
		for i := range m {
			blas32.Syrk(blas.NoTrans, 1, general(r, d, a[i*r*d:]), 0, pp)
			blas32.Syrk(blas.NoTrans, 1, general(r, k, g[i*r*k:]), 0, gg)
			var v float64
			for p := 0; p < r; p++ {
				v += float64(pp.Data[p*r+p]) * float64(gg.Data[p*r+p])
				var off float64
				for q := p + 1; q < r; q++ {
					off += float64(pp.Data[p*r+q]) * float64(gg.Data[p*r+q])
				}
				v += 2 * off
			}
			sq[i] += v
		}
	default:
		buf = grow(buf, d*k)
		w := general(d, k, buf)
		for i := range m {
			blas32.Gemm(blas.Trans, blas.NoTrans, 1, general(r, d, a[i*r*d:]), general(r, k, g[i*r*k:]), 0, w)
			sq[i] += sumSq(w.Data)
		}
	}
	if geo.Bias {
		buf = grow(buf, k)
		for i := range m {
			s := buf[:k]
			columnSums(s, g[i*r*k:(i+1)*r*k], k)
			sq[i] += sumSq(s)
		}
	}
	return buf, nil
}

// ScaledSum adds Σ_i scale_i·∇ℓ_i over the m = len(scale) examples to the layer's weight
// gradient gw (In×Out, row-major) as Aᵀ·diag(scale)·G, one GEMM, and, with a bias, Σ_i
// scale_i·G_iᵀ1 to gb (len Out). With scale_i = min(1, C/‖∇ℓ_i‖) from SquaredNorms summed over
// a model's layers, it is the clipped gradient sum. G is scaled in place. buf is scratch, as
// in SquaredNorms.
func ScaledSum(gw, gb []float32, a, g []float32, scale []float32, geo LayerGeometry, buf []float32) ([]float32, error) {
	m := len(scale)
	if err := geo.check(a, g, m); err != nil {
		return buf, err
	}
	r, d, k := geo.Rows, geo.In, geo.Out
	if len(gw) < d*k || (geo.Bias && len(gb) < k) {
		return buf, fmt.Errorf("models: gradient buffers of %d and %d values for a %d×%d layer (bias %v)", len(gw), len(gb), d, k, geo.Bias)
	}
	g = g[:m*r*k]
	for i, c := range scale {
		if c != 1 {
			blas32.Scal(c, blas32.Vector{N: r * k, Inc: 1, Data: g[i*r*k:]})
		}
	}
	blas32.Gemm(blas.Trans, blas.NoTrans, 1, general(m*r, d, a), general(m*r, k, g), 1, general(d, k, gw))
	if geo.Bias {
		buf = grow(buf, k)
		s := buf[:k]
		columnSums(s, g, k)
		for c, v := range s {
			gb[c] += v
		}
	}
	return buf, nil
}
