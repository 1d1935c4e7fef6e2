package models

import (
	"math"

	"github.com/dptrain/dptrain/internal/kernels"
	"github.com/dptrain/dptrain/models/internal/core"
)

// Kernels of the direct executor (direct.go) on one sample's tensor in NHWC layout: an H×W×C
// activation is H·W rows of C channels, which is the layout a conv layer's GEMM produces (one
// row per output position, one column per channel), so no layer transposes its output. Every
// kernel handles one sample and is called by one goroutine, so results do not depend on how the
// batch is split.

// convGeom is a square-kernel convolution's geometry on an h×w×c input.
type convGeom struct {
	h, w, c     int // input
	k, s, pad   int // kernel, stride, zero padding
	oh, ow, out int // output positions and channels
}

// d is the patch width, k·k·c.
func (g convGeom) d() int { return g.k * g.k * g.c }

// im2col writes the patch matrix of x (h×w×c) to p, oh·ow rows of d = k·k·c columns ordered
// (kernel row, kernel column, channel): each kernel row of a patch is one contiguous run of
// k·c input values, copied at once, with zeros where the window overhangs the padding.
func (g convGeom) im2col(x, p []float32) {
	d, kc := g.d(), g.k*g.c
	for i := 0; i < g.oh; i++ {
		for j := 0; j < g.ow; j++ {
			row := p[(i*g.ow+j)*d : (i*g.ow+j+1)*d]
			c0 := j*g.s - g.pad // input column of the kernel's first column
			lo, hi := max(0, -c0), min(g.k, g.w-c0)
			for kr := 0; kr < g.k; kr++ {
				seg := row[kr*kc : (kr+1)*kc]
				r := i*g.s - g.pad + kr
				if r < 0 || r >= g.h || lo >= hi {
					clear(seg)
					continue
				}
				src := x[(r*g.w+c0+lo)*g.c : (r*g.w+c0+hi)*g.c]
				if lo == 0 && hi == g.k {
					copyRun(seg, src)
					continue
				}
				clear(seg[:lo*g.c])
				copy(seg[lo*g.c:hi*g.c], src)
				clear(seg[hi*g.c:])
			}
		}
	}
}

// copyRun copies src to dst (len(dst) ≥ len(src)): as one array move for the run lengths of
// the presets' kernel rows (8 and 64 values: cnn-tramer-boneh's conv1 and conv2), memmove
// otherwise, whose call costs more than moving 8 values.
func copyRun(dst, src []float32) {
	switch len(src) {
	case 8:
		*(*[8]float32)(dst) = [8]float32(src)
	case 64:
		*(*[64]float32)(dst) = [64]float32(src)
	default:
		copy(dst, src)
	}
}

// col2im adds every entry of the patch gradient dp back to the input element it was copied
// from, into dx (h×w×c, zeroed by the caller): im2col's adjoint.
func (g convGeom) col2im(dp, dx []float32) {
	d, kc := g.d(), g.k*g.c
	for i := 0; i < g.oh; i++ {
		for j := 0; j < g.ow; j++ {
			row := dp[(i*g.ow+j)*d : (i*g.ow+j+1)*d]
			c0 := j*g.s - g.pad
			lo, hi := max(0, -c0), min(g.k, g.w-c0)
			if lo >= hi {
				continue
			}
			for kr := 0; kr < g.k; kr++ {
				r := i*g.s - g.pad + kr
				if r < 0 || r >= g.h {
					continue
				}
				src := row[kr*kc+lo*g.c : kr*kc+hi*g.c]
				dst := dx[(r*g.w+c0+lo)*g.c : (r*g.w+c0+hi)*g.c]
				for t, v := range src {
					dst[t] += v
				}
			}
		}
	}
}

// poolGeom is k×k pooling with stride s and no padding on an h×w×c input.
type poolGeom struct {
	h, w, c int
	k, s    int
	oh, ow  int
}

// maxForward writes each window's maximum to y (oh×ow×c) and the index in x of the element its
// gradient goes to, the window's first maximum in row-major order, to arg. The value is Go's
// max, NaN if the window holds a NaN, so that a non-finite activation reaches the example's
// gradient norm, which clips it to zero (as the graph engine's pool2d does on NCHW planes). The
// running maximum is compared on kernels.OrderedKey, integers, and the index selected
// arithmetically, so that random activations cost no mispredicted branches; key is scratch of c
// elements.
func (g poolGeom) maxForward(x, y []float32, arg []int32, key []int32) {
	c := g.c
	ninf := float32(math.Inf(-1))
	kinf := kernels.OrderedKey(ninf)
	key = key[:c]
	for i := 0; i < g.oh; i++ {
		for j := 0; j < g.ow; j++ {
			o := (i*g.ow + j) * c
			yo, ao := y[o:o+c], arg[o:o+c]
			first := (i*g.s*g.w + j*g.s) * c
			for ch := range yo {
				yo[ch], key[ch], ao[ch] = ninf, kinf, int32(first+ch)
			}
			for a := 0; a < g.k; a++ {
				for b := 0; b < g.k; b++ {
					base := ((i*g.s+a)*g.w + j*g.s + b) * c
					xs := x[base : base+c]
					xs, yo, ao := xs[:c], yo[:c], ao[:c]
					for ch, v := range xs {
						kv := kernels.OrderedKey(v)
						sel := int32(uint64(int64(key[ch])-int64(kv)) >> 63) // 1 if kv > key
						key[ch] = max(key[ch], kv)
						ao[ch] += (int32(base+ch) - ao[ch]) * sel
						yo[ch] = max(yo[ch], v)
					}
				}
			}
		}
	}
}

// max2Forward is maxForward for 2×2 windows with stride 1 (cnn-tramer-boneh's pooling), made
// separable as the graph engine's maxPlane2Arg is on NCHW planes: the first maximum of each
// horizontal pair of an input row, then of two such pairs one row apart, which is the window's
// first maximum in row-major order. In NHWC a row's horizontal pairs are its values against the
// same values one pixel (c elements) later, so both passes are streams over contiguous rows. fs
// is scratch of 2·ow·c elements and sc of 4·ow·c.
func (g poolGeom) max2Forward(x, y []float32, arg []int32, fs []float32, sc []int32) {
	n, rw := g.ow*g.c, g.w*g.c
	pm, cm := fs[:n], fs[n:2*n]
	pk, ck := sc[:n], sc[n:2*n]        // key of each pair's first maximum
	pi, ci := sc[2*n:3*n], sc[3*n:4*n] // its index in x
	pairs := func(dm []float32, dk, di []int32, r int) {
		row := x[r*rw : (r+1)*rw]
		kernels.MaxPairs(row[:n], row[g.c:g.c+n], dm, dk, di, n, int32(r*rw), int32(g.c))
	}
	pairs(pm, pk, pi, 0)
	for i := 0; i < g.oh; i++ {
		pairs(cm, ck, ci, i+1)
		kernels.MaxRows(y[i*n:(i+1)*n], arg[i*n:(i+1)*n], pm, cm, pk, ck, pi, ci)
		pm, cm = cm, pm
		pk, ck = ck, pk
		pi, ci = ci, pi
	}
}

// maxBackward adds dy (oh×ow×c) to dx (h×w×c, zeroed by the caller) through the indices
// maxForward stored.
func maxBackward(arg []int32, dy, dx []float32) {
	for o, v := range dy {
		dx[arg[o]] += v
	}
}

// avgForward writes each window's mean to y.
func (g poolGeom) avgForward(x, y []float32) {
	c := g.c
	inv := 1 / float32(g.k*g.k)
	for i := 0; i < g.oh; i++ {
		for j := 0; j < g.ow; j++ {
			yo := y[(i*g.ow+j)*c : (i*g.ow+j+1)*c]
			clear(yo)
			for a := 0; a < g.k; a++ {
				for b := 0; b < g.k; b++ {
					base := ((i*g.s+a)*g.w + j*g.s + b) * c
					for ch, v := range x[base : base+c] {
						yo[ch] += v
					}
				}
			}
			for ch := range yo {
				yo[ch] *= inv
			}
		}
	}
}

// avgBackward spreads each window's gradient evenly over the window, adding to dx (zeroed by
// the caller).
func (g poolGeom) avgBackward(dy, dx []float32) {
	c := g.c
	inv := 1 / float32(g.k*g.k)
	for i := 0; i < g.oh; i++ {
		for j := 0; j < g.ow; j++ {
			gy := dy[(i*g.ow+j)*c : (i*g.ow+j+1)*c]
			for a := 0; a < g.k; a++ {
				for b := 0; b < g.k; b++ {
					base := ((i*g.s+a)*g.w + j*g.s + b) * c
					dst := dx[base : base+c]
					for ch, v := range gy {
						dst[ch] += v * inv
					}
				}
			}
		}
	}
}

// gnGeom is GroupNorm (Wu & He 2018, eqs. 1–2 and the per-channel affine map) on one sample's
// hw×c tensor, in groups of c/groups consecutive channels. Statistics accumulate in float64 as
// the graph engine's groupStats does on NCHW planes.
type gnGeom struct{ hw, c, groups int }

// forward writes x̂ = (x − μ_g)/√(σ²_g + ε) to xh, y = x̂·γ + β to y, and each
// channel's group 1/σ to inv (c values). acc is scratch of 2·c values.
func (g gnGeom) forward(x, xh, y, gamma, beta []float32, inv []float64, acc []float64) {
	c, cg := g.c, g.c/g.groups
	n := float64(g.hw * cg)
	mean, sq := acc[:c], acc[c:2*c]
	clear(sq)
	kernels.ChanSum(x, g.hw, c, sq)
	for gr := 0; gr < g.groups; gr++ {
		var s float64
		for _, v := range sq[gr*cg : (gr+1)*cg] {
			s += v
		}
		for ch := gr * cg; ch < (gr+1)*cg; ch++ {
			mean[ch] = s / n
		}
	}
	clear(sq)
	kernels.ChanSqDev(x, g.hw, c, mean, sq)
	inv = inv[:c]
	for gr := 0; gr < g.groups; gr++ {
		var s float64
		for _, v := range sq[gr*cg : (gr+1)*cg] {
			s += v
		}
		for ch := gr * cg; ch < (gr+1)*cg; ch++ {
			inv[ch] = 1 / math.Sqrt(s/n+core.GroupNormEpsilon)
		}
	}
	kernels.ChanNormalize(x, xh, y, g.hw, c, mean, inv, gamma, beta)
}

// backward writes the sample's gradients of γ and β, Σ_positions x̂ ⊙ dy and Σ_positions dy,
// to gg and gb, and, when dx is not nil, the gradient with respect to x to dx (adding to it
// when add is set): with ĝ = dy ⊙ γ, dx = (1/σ)(ĝ − mean(ĝ) − x̂·mean(ĝ ⊙ x̂)) per group, the
// means over the group's positions and channels (as groupNormaliseDiffOp). xh and inv are
// forward's; acc and tmp are scratch of 2·c and 3·c values.
func (g gnGeom) backward(xh, dy, gamma []float32, inv []float64, gg, gb, dx []float32, add bool, acc []float64, tmp []float32) {
	c, cg := g.c, g.c/g.groups
	n := float64(g.hw * cg)
	sg, sb := acc[:c], acc[c:2*c]
	clear(sg)
	clear(sb)
	kernels.ChanDots(xh, dy, g.hw, c, sg, sb)
	for ch := range c {
		gg[ch], gb[ch] = float32(sg[ch]), float32(sb[ch])
	}
	if dx == nil {
		return
	}
	// mean(ĝ) = Σ_c γ_c·Σ_p dy / n and mean(ĝ ⊙ x̂) = Σ_c γ_c·Σ_p x̂·dy / n over the group; then
	// dx = a_c·dy − b_c − x̂·d_c per channel, with a_c = γ_c/σ, b_c = mean(ĝ)/σ, d_c = mean(ĝ ⊙ x̂)/σ.
	a, b, d := tmp[:c], tmp[c:2*c], tmp[2*c:3*c]
	for gr := 0; gr < g.groups; gr++ {
		var mg, mgx float64
		for ch := gr * cg; ch < (gr+1)*cg; ch++ {
			mg += float64(gamma[ch]) * sb[ch]
			mgx += float64(gamma[ch]) * sg[ch]
		}
		for ch := gr * cg; ch < (gr+1)*cg; ch++ {
			a[ch] = float32(float64(gamma[ch]) * inv[ch])
			b[ch] = float32(mg / n * inv[ch])
			d[ch] = float32(mgx / n * inv[ch])
		}
	}
	kernels.ChanAffineDiff(xh, dy, dx, g.hw, c, a, b, d, add)
}
