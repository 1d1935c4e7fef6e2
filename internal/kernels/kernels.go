package kernels

import (
	"fmt"
	"math"

	"github.com/dptrain/dptrain/layer"
	"gonum.org/v1/gonum/blas"
	"gonum.org/v1/gonum/blas/blas64"
)

// The per-example clipping kernels of ghost clipping (see models/ghost.go for the identities),
// as plain functions on a parameter layer's input A, the gradient G of the summed loss with
// respect to its output, and the layer's geometry. models.Network's ClippedGradSum uses them;
// an optimizer that computes A and G without a gorgonia backward pass (DP-MBCD's lifted layers,
// DP-ULR's likelihood-ratio estimates) clips per example with the same code.

// checkGeometry returns an error unless a and g hold m examples of geometry geo.
func checkGeometry(geo layer.Geometry, a, g []float32, m int) error {
	if geo.Rows <= 0 || geo.In <= 0 || geo.Out <= 0 {
		return fmt.Errorf("models: layer geometry %+v: rows, in and out must be positive", geo)
	}
	if len(a) < m*geo.Rows*geo.In || len(g) < m*geo.Rows*geo.Out {
		return fmt.Errorf("models: %d examples of geometry %+v need len(A) ≥ %d and len(G) ≥ %d, got %d and %d",
			m, geo, m*geo.Rows*geo.In, m*geo.Rows*geo.Out, len(a), len(g))
	}
	return nil
}

// SquaredNorms adds to sq[i], for each of the m = len(sq) examples, the squared l2 norm of
// example i's gradient of the layer's weight (and bias): ‖a_i‖²‖g_i‖² (+ ‖g_i‖²) for a dense
// layer, ‖P_iᵀG_i‖² (+ ‖G_iᵀ1‖²) for a conv layer, by the Gram identity or one product per
// example, whichever is cheaper. A is (m·Rows)×In and G (m·Rows)×Out, row-major. buf is
// scratch space, reused when large enough; the (possibly grown) buffer is returned.
//
// For a conv layer the value added is never below the exact squared norm of P_iᵀG_i (+ G_iᵀ1)
// for the given float32 P_i and G_i, and exceeds it by at most a relative 1e-6 (see
// convSquaredNorm). A NaN or infinite value in A or G
// gives a NaN or infinite sq[i], never an error: callers clip such an example to zero
// (ClipScale).
func SquaredNorms(sq []float64, a, g []float32, geo layer.Geometry, buf []float32) ([]float32, error) {
	buf, _, err := SquaredNormsBuf(sq, a, g, geo, buf, nil)
	return buf, err
}

// SquaredNormsBuf is SquaredNorms with the float64 scratch of conv layers, b64, reused when large
// enough and returned.
func SquaredNormsBuf(sq []float64, a, g []float32, geo layer.Geometry, buf []float32, b64 []float64) ([]float32, []float64, error) {
	m := len(sq)
	if err := checkGeometry(geo, a, g, m); err != nil {
		return buf, b64, err
	}
	r, d, k := geo.Rows, geo.In, geo.Out
	if r == 1 {
		for i := range m {
			gg := SumSquares(g[i*k : (i+1)*k])
			sq[i] += SumSquares(a[i*d:(i+1)*d]) * gg
			if geo.Bias {
				sq[i] += gg
			}
		}
		return buf, b64, nil
	}
	// Conv: in float64, by the Gram identity or one product per example, whichever is cheaper
	// (convSquaredNorm).
	gram := geo.UseGram()
	b64 = GrowF64(b64, r*(d+k)+2*r*r+d*k)
	for i := range m {
		sq[i] += convSquaredNorm(a[i*r*d:(i+1)*r*d], g[i*r*k:(i+1)*r*k], geo, gram, b64)
	}
	return buf, b64, nil
}

// gramTol is the largest relative over-estimate of a squared norm that the Gram path accepts
// from its round-off allowance before it recomputes the example's gradient explicitly.
const gramTol = 1e-6

// unit64 is float64's unit round-off, 2⁻⁵³.
const unit64 = 0x1p-53

// convSquaredNorm returns an upper bound, tight to a relative 1e-6, on the exact squared norm
// of one example's conv gradient, ‖PᵀG‖_F² (+ ‖Gᵀ1‖² with a bias), for P (r×d) and G (r×k)
// row-major float32, computed by the Gram identity when gram is set and by forming PᵀG
// otherwise, all in float64; s is float64 scratch of r(d+k) + 2r² + dk values.
//
// The Gram identity ‖PᵀG‖_F² = Σ_{p,q} (PPᵀ)_{pq}(GGᵀ)_{pq} is a sum of r² terms of size up to
// S² with S = Σ_p ‖P_p‖‖G_p‖ ≥ ‖PᵀG‖_F, and when per-position gradients cancel the result is
// many orders of magnitude below its terms: in float32 it then comes out as noise, near zero
// or negative (the clip factor min(1, C/‖g‖) then releases a gradient far above C, or the norm
// is NaN). So the Gram matrices are formed and summed in float64 (float32 inputs, exact
// products), and the computed value v is raised by a rigorous bound on its round-off error.
// By the standard bound for inner products (Higham 2002, "Accuracy and Stability of Numerical
// Algorithms", §3.1, Eq. 3.5), each computed Gram entry is within γ_d‖P_p‖‖P_q‖ (resp.
// γ_k‖G_p‖‖G_q‖) of the exact one, γ_n = nu/(1 − nu), so
//
//	|v − ‖PᵀG‖_F²| ≤ (γ_d + γ_k + γ_dγ_k + γ_{r²+1}(1+γ_d)(1+γ_k))·S²,
//
// which 2(d + k + r² + 2)u·Ŝ² bounds, Ŝ being S from the computed diagonals (‖P_p‖² ≤
// (PPᵀ)_pp/(1 − γ_d)). When that allowance exceeds gramTol·v (cancellation, or a NaN/Inf), or
// gram is not set, the gradient PᵀG is formed explicitly in float64, whose entries are within
// γ_r Σ_p|P_pu||G_pv| of the exact ones, so its norm is within γ_r·S, and that allowance is
// added instead (the same cancellation in float32 would make it γ_r·S with u = 2⁻²⁴). The bias
// gradient Gᵀ1 is summed in float64 with the same kind of allowance.
func convSquaredNorm(pf, gf []float32, geo layer.Geometry, gram bool, s []float64) float64 {
	r, d, k := geo.Rows, geo.In, geo.Out
	p64, g64 := s[:r*d], s[r*d:r*(d+k)]
	ToF64(p64, pf[:r*d])
	ToF64(g64, gf[:r*k])
	return ConvSquaredNorm64(p64, g64, geo, gram, s[r*(d+k):])
}

// ToF64 converts src to float64 into dst.
func ToF64(dst []float64, src []float32) {
	dst = dst[:len(src)]
	for t, v := range src {
		dst[t] = float64(v)
	}
}

// ConvSquaredNorm64 is convSquaredNorm on P and G already converted to float64; s is scratch of
// 2r² + dk values.
func ConvSquaredNorm64(p64, g64 []float64, geo layer.Geometry, gram bool, s []float64) float64 {
	r, d, k := geo.Rows, geo.In, geo.Out
	pp, gg := s[:r*r], s[r*r:2*r*r]
	// The diagonals of pp and gg are ‖P_p‖² and ‖G_p‖² up to round-off.
	var v, sum float64
	if gram {
		blas64.Syrk(blas.NoTrans, 1, blas64.General{Rows: r, Cols: d, Stride: d, Data: p64}, 0,
			blas64.Symmetric{Uplo: blas.Upper, N: r, Stride: r, Data: pp})
		blas64.Syrk(blas.NoTrans, 1, blas64.General{Rows: r, Cols: k, Stride: k, Data: g64}, 0,
			blas64.Symmetric{Uplo: blas.Upper, N: r, Stride: r, Data: gg})
		for p := 0; p < r; p++ {
			dp, dg := pp[p*r+p], gg[p*r+p]
			v += dp * dg
			sum += math.Sqrt(dp * dg)
			var off float64
			for q := p + 1; q < r; q++ {
				off += pp[p*r+q] * gg[p*r+q]
			}
			v += 2 * off
		}
	} else {
		for p := 0; p < r; p++ {
			var dp, dg float64
			for _, x := range p64[p*d : (p+1)*d] {
				dp += x * x
			}
			for _, x := range g64[p*k : (p+1)*k] {
				dg += x * x
			}
			pp[p*r+p], gg[p*r+p] = dp, dg
			sum += math.Sqrt(dp * dg)
		}
	}
	sum *= 1 + float64(2*(d+k+r+4))*unit64 // Ŝ ≥ S: the diagonals' and the sum's round-off
	if slack := float64(2*(d+k+r*r+2)) * unit64 * sum * sum; gram && v <= math.MaxFloat64 && slack <= gramTol*v {
		v += slack
	} else {
		// PᵀG explicitly.
		w := s[2*r*r : 2*r*r+d*k]
		blas64.Gemm(blas.Trans, blas.NoTrans, 1, blas64.General{Rows: r, Cols: d, Stride: d, Data: p64},
			blas64.General{Rows: r, Cols: k, Stride: k, Data: g64}, 0, blas64.General{Rows: d, Cols: k, Stride: k, Data: w})
		var w2 float64
		for _, x := range w {
			w2 += x * x
		}
		n := math.Sqrt(w2)*(1+float64(2*(d*k+2))*unit64) + float64(2*(r+1))*unit64*sum
		v = n * n
	}
	if geo.Bias {
		var b2, gsum float64
		for c := 0; c < k; c++ {
			var col float64
			for p := 0; p < r; p++ {
				col += g64[p*k+c]
			}
			b2 += col * col
		}
		for p := 0; p < r; p++ {
			gsum += math.Sqrt(gg[p*r+p])
		}
		n := math.Sqrt(b2)*(1+float64(2*(k+2))*unit64) + float64(2*(r+k+4))*unit64*gsum
		v += n * n
	}
	return v
}

// ScaledSum adds Σ_i scale_i·∇ℓ_i over the m = len(scale) examples to the layer's weight
// gradient gw (In×Out, row-major) as Aᵀ·diag(scale)·G and, with a bias, Σ_i scale_i·G_iᵀ1 to
// gb (len Out). With scale_i from ClipScale on the norms SquaredNorms summed over a model's
// layers, it is the clipped gradient sum. The scaling, the product and the bias sums are done
// in float64 and rounded once per coordinate (addProducts64), so the sum's rounding is bounded
// by float64's, whatever the order in which the BLAS adds the examples; an example with scale 0
// (a non-finite gradient) is left out, so that its NaN or Inf values cannot reach the sum. A
// and G are not modified. buf is scratch, as in SquaredNorms.
func ScaledSum(gw, gb []float32, a, g []float32, scale []float32, geo layer.Geometry, buf []float32) ([]float32, error) {
	buf, _, err := ScaledSumBuf(gw, gb, a, g, scale, geo, buf, nil)
	return buf, err
}

// ScaledSumBuf is ScaledSum with its float64 scratch, b64, returned grown.
func ScaledSumBuf(gw, gb []float32, a, g []float32, scale []float32, geo layer.Geometry, buf []float32, b64 []float64) ([]float32, []float64, error) {
	m := len(scale)
	if err := checkGeometry(geo, a, g, m); err != nil {
		return buf, b64, err
	}
	r, d, k := geo.Rows, geo.In, geo.Out
	if len(gw) < d*k || (geo.Bias && len(gb) < k) {
		return buf, b64, fmt.Errorf("models: gradient buffers of %d and %d values for a %d×%d layer (bias %v)", len(gw), len(gb), d, k, geo.Bias)
	}
	if !geo.Bias {
		gb = nil
	}
	return buf, addProducts64(gw, gb, a, g[:m*r*k], scale, m, geo, b64), nil
}

// products64Group is how many examples addProducts64 converts to float64 at a time.
const products64Group = 32

// SumProducts64 adds Σ_i c_i·P_iᵀG_i to gw and, when gb is not nil, Σ_i c_i·G_iᵀ1 to gb, in
// float64, from blk, the m = len(scale) examples' P (m·r×d) then G (m·r×k) already in float64
// (see addProducts64 for why float64); it scales blk's G rows in place and zeroes the rows of
// examples with c_i = 0. The caller rounds the sum to float32 once, after every example.
func SumProducts64(gw, gb []float64, blk []float64, scale []float32, geo layer.Geometry) {
	r, d, k := geo.Rows, geo.In, geo.Out
	m := len(scale)
	a64, g64 := blk[:m*r*d], blk[m*r*d:m*r*(d+k)]
	for i, c := range scale {
		switch c {
		case 1:
		case 0:
			clear(a64[i*r*d : (i+1)*r*d])
			clear(g64[i*r*k : (i+1)*r*k])
		default:
			cf := float64(c)
			for t := range g64[i*r*k : (i+1)*r*k] {
				g64[i*r*k+t] *= cf
			}
		}
	}
	blas64.Gemm(blas.Trans, blas.NoTrans, 1, blas64.General{Rows: m * r, Cols: d, Stride: d, Data: a64},
		blas64.General{Rows: m * r, Cols: k, Stride: k, Data: g64}, 1, blas64.General{Rows: d, Cols: k, Stride: k, Data: gw[:d*k]})
	if gb != nil {
		for row := 0; row < m*r; row++ {
			for c, v := range g64[row*k : (row+1)*k] {
				gb[c] += v
			}
		}
	}
}

// addProducts64 adds Σ_i c_i·P_iᵀG_i over the m examples of a conv layer to gw and, when gb is
// not nil, Σ_i c_i·G_iᵀ1 to gb, with c_i = scale[i] (1 when scale is nil), scaled and
// accumulated in float64 and rounded to float32 once per coordinate; an example with c_i = 0 is
// left out. A conv example's P_iᵀG_i is a sum over positions whose terms can cancel by orders
// of magnitude (see convSquaredNorm): float32 arithmetic (scaling G_i by c_i, or a product over
// the batch) rounds relative to those terms, u·Σ_p‖P_p‖‖G_p‖ rather than u·‖P_iᵀG_i‖, and the
// clipped contribution, or one example's effect on the sum, then exceeds its clip norm by that
// much. In float64 that error is 2²⁹ times smaller. s is float64 scratch, returned grown.
func addProducts64(gw, gb, a, g []float32, scale []float32, m int, geo layer.Geometry, s []float64) []float64 {
	r, d, k := geo.Rows, geo.In, geo.Out
	grp := max(min(m, products64Group), 1)
	s = GrowF64(s, d*k+k+grp*r*(d+k))
	w64, b64 := s[:d*k], s[d*k:d*k+k]
	a64, g64 := s[d*k+k:d*k+k+grp*r*d], s[d*k+k+grp*r*d:d*k+k+grp*r*(d+k)]
	clear(w64)
	clear(b64)
	for lo := 0; lo < m; lo += grp {
		n := 0 // rows converted
		for i := lo; i < min(lo+grp, m); i++ {
			c := 1.0
			if scale != nil {
				c = float64(scale[i])
			}
			if c == 0 {
				continue
			}
			for t, v := range a[i*r*d : (i+1)*r*d] {
				a64[n*d+t] = float64(v)
			}
			for t, v := range g[i*r*k : (i+1)*r*k] {
				g64[n*k+t] = float64(v) * c
			}
			n += r
		}
		if n == 0 {
			continue
		}
		blas64.Gemm(blas.Trans, blas.NoTrans, 1, blas64.General{Rows: n, Cols: d, Stride: d, Data: a64},
			blas64.General{Rows: n, Cols: k, Stride: k, Data: g64}, 1, blas64.General{Rows: d, Cols: k, Stride: k, Data: w64})
		if gb != nil {
			for row := 0; row < n; row++ {
				for c, v := range g64[row*k : (row+1)*k] {
					b64[c] += v
				}
			}
		}
	}
	for t, v := range w64 {
		gw[t] = float32(float64(gw[t]) + v)
	}
	if gb != nil {
		for c, v := range b64 {
			gb[c] = float32(float64(gb[c]) + v)
		}
	}
	return s
}
