package models

import (
	"fmt"
	"math"

	"gonum.org/v1/gonum/blas"
	"gonum.org/v1/gonum/blas/blas32"

	"github.com/dptrain/dptrain/data"
	"github.com/dptrain/dptrain/internal/kernels"
)

// The direct executor's clipping: per-example norms, clip factors and the clipped sums of the
// conv and GroupNorm layers per block, and the per-sample path (PerSampleGradSum).

// layerAG returns parameter op i's A and G rows for samples [lo, lo+m).
func (dr *direct) layerAG(i, lo, m int) (a, g []float32, l *pLayer) {
	o := &dr.ops[i]
	l = &dr.nw.plan.layers[o.p]
	r := l.rows()
	if o.kind == opConv {
		a = dr.patch[o.p][lo*r*l.d : (lo+m)*r*l.d]
	} else {
		a = dr.in(i)[lo*l.d : (lo+m)*l.d]
	}
	return a, dr.dy(i)[lo*r*l.k : (lo+m)*r*l.k], l
}

// keepSample reports whether a layer's per-sample gradients are materialised for its norms
// (a conv layer where that is cheaper than the Gram identity, see layer.Geometry.UseGram) and
// small enough to keep for a block: the block's clipped sum is then Σ c_i·(P_iᵀG_i) from the
// kept products, and the layer needs no second GEMM.
//
// A standardised conv layer is always kept: its norm is that of the mapped-back gradient, which
// the Gram identity does not give, and the clipped sum must hold the very vectors whose norms
// gave the clip factors (models/internal/core/ws.go). With oneDNN every conv layer small enough
// is kept: its backward-weights primitive materialises an example's gradient for less than the
// Gram identity costs in float64 (ResNet-20's 8×8 stage).
func (dr *direct) keepSample(l *pLayer) bool {
	if l.kind != kindConv {
		return false
	}
	return l.ws || (dr.dn != nil || !l.geometry().UseGram()) && dr.block*l.d*l.k <= 1<<20
}

// clipBlock computes the block's per-sample gradient norms (into norms when set) and clip
// factors, scales each sample's G rows by its factor where a GEMM then sums them, and writes the
// block's conv weight and bias gradients, Σ_i c_i·P_iᵀG_i, to part. A sample whose norm is not
// finite is clipped to zero (ClipScale): its A and G rows are zeroed in every parameter layer,
// so that no NaN or Inf of it reaches a sum, and it is counted in st.NonFinite.
func (dr *direct) clipBlock(start, lo, m int, clip float64, needNorms bool, norms []float64, part []float64, st *data.Stats, s *directScratch) error {
	if needNorms {
		sq := dr.sq[lo : lo+m]
		clear(sq)
		for i := range dr.ops {
			if dr.ops[i].kind == opGN {
				l := &dr.nw.plan.layers[dr.ops[i].p]
				for e, v := range dr.gnG[dr.ops[i].p][lo*2*l.c : (lo+m)*2*l.c] {
					sq[e/(2*l.c)] += float64(v) * float64(v)
				}
				continue
			}
			if k := dr.ops[i].kind; k != opDense && k != opConv {
				continue
			}
			a, g, l := dr.layerAG(i, lo, m)
			if dr.keepSample(l) {
				if err := dr.materialise(sq, a, g, i, lo, s); err != nil {
					return fmt.Errorf("layer %s: %w", l.name, err)
				}
				continue
			}
			if l.kind == kindConv {
				// The block's P and G in float64 once, for the norms and the clipped sum.
				geo := l.geometry()
				r, d, k := geo.Rows, geo.In, geo.Out
				j := dr.ops[i].p
				s.blk64[j] = kernels.GrowF64(s.blk64[j], m*r*(d+k))
				p64, g64 := s.blk64[j][:m*r*d], s.blk64[j][m*r*d:m*r*(d+k)]
				toF64(p64, a)
				toF64(g64, g)
				s.norm64 = kernels.GrowF64(s.norm64, 2*r*r+d*k)
				gram := geo.UseGram()
				// Each example's P and G from the same aligned place (see alignedF32).
				if len(s.one64) < r*(d+k) {
					s.one64 = alignedF64(r * (d + k))
				}
				p1, g1 := s.one64[:r*d], s.one64[r*d:r*(d+k)]
				for e := range sq {
					copy(p1, p64[e*r*d:(e+1)*r*d])
					copy(g1, g64[e*r*k:(e+1)*r*k])
					sq[e] += convSquaredNorm64(p1, g1, geo, gram, s.norm64)
				}
				continue
			}
			var err error
			if s.norm, s.norm64, err = squaredNorms(sq, a, g, l.geometry(), s.norm, s.norm64); err != nil {
				return fmt.Errorf("layer %s: %w", l.name, err)
			}
		}
		for k, v := range sq {
			norm := math.Sqrt(v)
			if norms != nil {
				norms[start+lo+k] = norm
			}
			c, clipped, bad := ClipScale(clip, norm)
			dr.scale[lo+k] = c
			if clipped {
				st.Clipped++
			}
			if bad {
				st.NonFinite++
				dr.dropSample(lo + k)
			}
		}
	}
	for i := range dr.ops {
		if dr.ops[i].kind == opGN {
			// Σ_i c_i·(∇γ_i, ∇β_i), in sample order; a dropped sample has c_i = 0.
			j := dr.ops[i].p
			c2 := 2 * dr.nw.plan.layers[j].c
			sum := part[dr.partOff[j] : dr.partOff[j]+c2]
			clear(sum)
			for k := range m {
				c := float32(1)
				if needNorms {
					if c = dr.scale[lo+k]; c == 0 {
						continue
					}
				}
				for t, v := range dr.gnG[j][(lo+k)*c2 : (lo+k+1)*c2] {
					sum[t] += float64(c * v)
				}
			}
			continue
		}
		if k := dr.ops[i].kind; k != opDense && k != opConv {
			continue
		}
		a, g, l := dr.layerAG(i, lo, m)
		j := dr.ops[i].p
		if needNorms && dr.keepSample(l) {
			// Σ_i c_i·W_i over the kept per-sample gradients, in sample order.
			off, dk := dr.partOff[j], l.d*l.k
			w, b := part[off:off+dk], part[off+dk:]
			clear(w)
			if l.b >= 0 {
				clear(b[:l.k])
			}
			for k, c := range dr.scale[lo : lo+m] {
				if c == 0 {
					continue // clipped to zero: its product may hold NaN
				}
				kernels.AddScaled64(w, c, s.mat[j][k*dk:(k+1)*dk])
				if l.b >= 0 {
					kernels.AddScaled64(b[:l.k], c, s.bias[j][k*l.k:(k+1)*l.k])
				}
			}
			continue
		}
		if l.kind != kindConv {
			// Dense: G scaled here, summed by the chunk's GEMM (chunk), in float64 when the
			// sum is clipped: the block's A and scaled G are converted here, while they are in
			// this core's cache.
			if needNorms {
				for k, c := range dr.scale[lo : lo+m] {
					if c != 1 {
						blas32.Scal(c, blas32.Vector{N: l.k, Inc: 1, Data: g[k*l.k:]})
					}
				}
			}
			if !math.IsInf(clip, 1) {
				toF64(dr.a64[i][lo*l.d:(lo+m)*l.d], a)
				toF64(dr.g64d[i][lo*l.k:(lo+m)*l.k], g)
			}
			continue
		}
		off, dk := dr.partOff[j], l.d*l.k
		if !needNorms {
			// No clipping (clip = +Inf, no norms asked for): nothing is released privately,
			// one float32 GEMM.
			s.wtmp = kernels.Grow(s.wtmp, dk+l.k)
			w := s.wtmp[:dk]
			gemm(blas.Trans, blas.NoTrans, m*l.rows(), l.d, a, m*l.rows(), l.k, g, 0, l.d, l.k, w)
			dr.standardiseBack(j, w, s) // linear: the sum maps back as a whole
			for t, v := range w {
				part[off+t] = float64(v)
			}
			if l.b >= 0 {
				b := s.wtmp[dk : dk+l.k]
				columnSums(b, g, l.k)
				for t, v := range b {
					part[off+dk+t] = float64(v)
				}
			}
			continue
		}
		// Σ_i c_i·P_iᵀG_i and Σ_i c_i·G_iᵀ1, scaled and accumulated in float64 from the
		// block's float64 copies (see addProducts64); a dropped sample has c_i = 0.
		var gb []float64
		if l.b >= 0 {
			gb = part[off+dk : off+dk+l.k]
			clear(gb)
		}
		clear(part[off : off+dk])
		sumProducts64(part[off:off+dk], gb, s.blk64[j], dr.scale[lo:lo+m], l.geometry())
	}
	return nil
}

// dropSample zeroes sample i's (chunk index) rows of A and G in every parameter layer, so that
// the clipped-sum GEMMs over the chunk get exactly 0 from it whatever its values were (the
// float64 copies of conv layers are skipped by their zero scale instead).
func (dr *direct) dropSample(i int) {
	for oi := range dr.ops {
		if o := &dr.ops[oi]; o.kind == opGN {
			clear(dr.gnG[o.p][i*2*o.oc : (i+1)*2*o.oc])
			continue
		}
		if k := dr.ops[oi].kind; k != opDense && k != opConv {
			continue
		}
		a, g, _ := dr.layerAG(oi, i, 1)
		clear(a)
		clear(g)
	}
}

// materialise writes each of the block's per-sample gradients of conv op oi's weights,
// P_iᵀG_i (mapped back through the standardisation where the layer has one), to s.mat[j] and its
// bias gradients G_iᵀ1 to s.bias[j], and adds their squared norms to sq, with the arithmetic of
// SquaredNorms' materialising path; with oneDNN, P_iᵀG_i is its backward-weights primitive on
// the example's input (the block's samples start at lo).
func (dr *direct) materialise(sq []float64, a, g []float32, oi, lo int, s *directScratch) error {
	o := &dr.ops[oi]
	j := o.p
	l := &dr.nw.plan.layers[j]
	mat, bias := s.mat[j], s.bias[j]
	r, d, k := l.rows(), l.d, l.k
	for i := range sq {
		w := mat[i*d*k : (i+1)*d*k]
		if dr.dn != nil && !dr.patches[j] {
			is := o.inSize()
			if err := dr.dn.backwardWeights(j, s.dn, dr.in(oi)[(lo+i)*is:(lo+i+1)*is], g[i*r*k:(i+1)*r*k], w); err != nil {
				return err
			}
		} else {
			gemm(blas.Trans, blas.NoTrans, r, d, a[i*r*d:], r, k, g[i*r*k:], 0, d, k, w)
		}
		dr.standardiseBack(j, w, s)
		sq[i] += sumSq(w)
		if l.b >= 0 {
			cs := bias[i*k : (i+1)*k]
			columnSums(cs, g[i*r*k:(i+1)*r*k], k)
			sq[i] += sumSq(cs)
		}
	}
	return nil
}

// perSample is PerSampleGradSum on the direct executor: each block's samples are materialised
// one at a time on the block's goroutine (a_i g_iᵀ for dense layers, P_iᵀG_i for conv layers,
// G_i's column sums for biases), passed to f, and summed into the block's partial sum; the
// partial sums are added in block order, so the result does not depend on the number of
// workers. f is called from several goroutines at once, for different samples. A sample whose
// gradient is not finite is skipped (clipped to zero) and counted in Stats.NonFinite.
func (dr *direct) perSample(b data.Batch, f func(i int, g []float32), grad []float32) (data.Stats, error) {
	var st data.Stats
	np := len(dr.nw.params)
	dr.alloc(min(dr.nw.res.chunk, max(b.N, 1)))
	if err := dr.refreshWeights(); err != nil {
		return data.Stats{}, err
	}
	dr.setPatches(false, false) // sampleGrad reads the patches only without oneDNN
	dr.g64 = kernels.GrowF64(dr.g64, np)
	clear(dr.g64)
	nbMax := len(dr.part)
	if len(dr.psum) < nbMax || (nbMax > 0 && len(dr.psum[0]) != np) {
		dr.psum = make([][]float64, nbMax)
		for k := range dr.psum {
			dr.psum[k] = make([]float64, np)
		}
	}
	for start := 0; start < b.N; start += dr.nw.res.chunk {
		m := min(dr.nw.res.chunk, b.N-start)
		nb, err := dr.blocks(b, start, m, func(k, lo, mb int, s *directScratch) error {
			s.sample = kernels.Grow(s.sample, np)
			sum := dr.psum[k]
			clear(sum)
			for i := lo; i < lo+mb && s.err == nil; i++ {
				g := s.sample[:np]
				if sq := dr.sampleGrad(i, g, s); math.IsNaN(sq) || math.IsInf(sq, 0) {
					dr.stats[k].NonFinite++ // clipped to zero
					continue
				}
				if f != nil {
					f(start+i, g)
				}
				for t, v := range g {
					sum[t] += float64(v)
				}
			}
			return s.err
		}, &st, nil)
		if err != nil {
			return data.Stats{}, err
		}
		for k := range nb {
			for t, v := range dr.psum[k] {
				dr.g64[t] += v
			}
		}
	}
	for t, v := range dr.g64 {
		grad[t] = float32(v)
	}
	return st, nil
}

// sampleGrad writes sample i's gradient (i indexes the chunk) into g, laid out like the
// parameters, and returns its squared norm, +Inf if some element is not finite. The norm is
// assembled from the layers' pieces: a dense layer's weight gradient a_i g_iᵀ has squared norm
// ‖a_i‖²‖g_i‖², and an element overflows float32 exactly when max|a|·max|g| does; a conv layer's
// materialised P_iᵀG_i is summed. So no pass over the whole of g is needed to check it.
func (dr *direct) sampleGrad(i int, g []float32, s *directScratch) float64 {
	var sq float64
	for oi := range dr.ops {
		if o := &dr.ops[oi]; o.kind == opGN {
			l := &dr.nw.plan.layers[o.p]
			pg := dr.gnG[o.p][i*2*l.c : (i+1)*2*l.c]
			copy(g[l.w:l.w+l.c], pg[:l.c])
			copy(g[l.b:l.b+l.c], pg[l.c:])
			sq += sumSq(pg) // NaN or +Inf when an element is not finite
			continue
		}
		if k := dr.ops[oi].kind; k != opDense && k != opConv {
			continue
		}
		a, gz, l := dr.layerAG(oi, i, 1)
		if l.kind == kindDense {
			for r, av := range a {
				row := g[l.w+r*l.k : l.w+(r+1)*l.k]
				for c, gv := range gz {
					row[c] = av * gv
				}
			}
			if maxAbs(a)*maxAbs(gz) > math.MaxFloat32 {
				return math.Inf(1)
			}
			sq += sumSq(a) * sumSq(gz)
		} else {
			// P_iᵀG_i in patch row order (oneDNN's backward weights with engine dnnl, as
			// materialise), then back to parameter row order.
			s.wtmp = kernels.Grow(s.wtmp, l.d*l.k)
			if dr.dn != nil {
				is := dr.ops[oi].inSize()
				if err := dr.dn.backwardWeights(dr.ops[oi].p, s.dn, dr.in(oi)[i*is:(i+1)*is], gz, s.wtmp[:l.d*l.k]); err != nil {
					s.err = err
					return math.Inf(1)
				}
			} else {
				gemm(blas.Trans, blas.NoTrans, l.rows(), l.d, a, l.rows(), l.k, gz, 0, l.d, l.k, s.wtmp)
			}
			dr.standardiseBack(dr.ops[oi].p, s.wtmp[:l.d*l.k], s)
			for r, pr := range dr.perm[dr.ops[oi].p] {
				copy(g[l.w+int(pr)*l.k:l.w+int(pr+1)*l.k], s.wtmp[r*l.k:(r+1)*l.k])
			}
			sq += sumSq(s.wtmp[:l.d*l.k])
		}
		if l.b >= 0 {
			columnSums(g[l.b:l.b+l.k], gz, l.k)
			sq += sumSq(g[l.b : l.b+l.k])
		}
	}
	return sq
}

// maxAbs is the largest |v| in s as a float64 (NaN if s holds a NaN).
func maxAbs(s []float32) float64 {
	var m float64
	for _, v := range s {
		m = max(m, math.Abs(float64(v)))
	}
	return m
}
