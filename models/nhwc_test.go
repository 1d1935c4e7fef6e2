package models

import (
	"math"
	"math/rand/v2"
	"testing"
)

// TestMax2MatchesGeneral checks the separable 2×2 stride-1 max pooling against the general
// window loop on NHWC data with many ties (values from a set of five, so that the first-maximum
// rule decides most windows), a NaN and infinities: equal values (NaN where the window holds
// one) and equal argmax indices wherever the window holds no NaN.
func TestMax2MatchesGeneral(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for _, sh := range []struct{ h, w, c int }{{2, 2, 1}, {5, 7, 3}, {14, 14, 16}, {5, 5, 32}} {
		g := poolGeom{h: sh.h, w: sh.w, c: sh.c, k: 2, s: 1, oh: sh.h - 1, ow: sh.w - 1}
		x := make([]float32, sh.h*sh.w*sh.c)
		for i := range x {
			x[i] = float32(rng.IntN(5)) - 2
		}
		x[len(x)/2] = float32(math.NaN())
		x[0] = float32(math.Inf(1))
		x[len(x)-1] = float32(math.Inf(-1))
		n := g.oh * g.ow * g.c
		y1, y2 := make([]float32, n), make([]float32, n)
		a1, a2 := make([]int32, n), make([]int32, n)
		g.maxForward(x, y1, a1, make([]int32, g.c))
		g.max2Forward(x, y2, a2, make([]float32, 2*g.ow*g.c), make([]int32, 4*g.ow*g.c))
		for o := range y1 {
			if math.Float32bits(y1[o]) != math.Float32bits(y2[o]) && !(y1[o] != y1[o] && y2[o] != y2[o]) {
				t.Fatalf("%v: output %d: general %v, separable %v", sh, o, y1[o], y2[o])
			}
			if y1[o] == y1[o] && a1[o] != a2[o] {
				t.Fatalf("%v: output %d: general argmax %d, separable %d", sh, o, a1[o], a2[o])
			}
		}
	}
}

// TestIm2colAdjoint checks col2im against im2col through the adjoint identity
// ⟨im2col(x), p⟩ = ⟨x, col2im(p)⟩ for random x and p, with padding and strides that leave
// windows hanging over every edge.
func TestIm2colAdjoint(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	for _, g := range []convGeom{
		{h: 28, w: 28, c: 1, k: 8, s: 2, pad: 3},
		{h: 13, w: 13, c: 16, k: 4, s: 2},
		{h: 7, w: 5, c: 3, k: 3, s: 1, pad: 2},
	} {
		g.oh, g.ow = (g.h+2*g.pad-g.k)/g.s+1, (g.w+2*g.pad-g.k)/g.s+1
		x := make([]float32, g.h*g.w*g.c)
		p := make([]float32, g.oh*g.ow*g.d())
		for i := range x {
			x[i] = float32(rng.NormFloat64())
		}
		for i := range p {
			p[i] = float32(rng.NormFloat64())
		}
		px := make([]float32, len(p))
		g.im2col(x, px)
		dx := make([]float32, len(x))
		g.col2im(p, dx)
		var lhs, rhs float64
		for i := range p {
			lhs += float64(px[i]) * float64(p[i])
		}
		for i := range x {
			rhs += float64(x[i]) * float64(dx[i])
		}
		if math.Abs(lhs-rhs) > 1e-4*math.Max(1, math.Abs(lhs)) {
			t.Errorf("%+v: ⟨im2col x, p⟩ = %v, ⟨x, col2im p⟩ = %v", g, lhs, rhs)
		}
	}
}
