package graph

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"
)

// naivePool is a direct reference for pool2d: one output element at a time, every window
// scanned in row-major order; max pooling's output is the largest element (NaN if there is
// one) and its gradient goes to the first maximum.
func naivePool(p pool2d, x, dy []float32, planes, h, w int) (y, dx []float32) {
	oh, ow := p.outHW(h, w)
	y, dx = make([]float32, planes*oh*ow), make([]float32, len(x))
	for pl := range planes {
		for i := range oh {
			for j := range ow {
				o := pl*oh*ow + i*ow + j
				top, bi, sum := float32(math.Inf(-1)), pl*h*w+i*p.s*w+j*p.s, float32(0)
				for a := range p.k {
					for b := range p.k {
						idx := pl*h*w + (i*p.s+a)*w + j*p.s + b
						sum += x[idx]
						if x[idx] > top {
							bi = idx
						}
						top = max(top, x[idx])
					}
				}
				if p.max {
					y[o] = top
					dx[bi] += dy[o]
					continue
				}
				y[o] = sum / float32(p.k*p.k)
				for a := range p.k {
					for b := range p.k {
						dx[pl*h*w+(i*p.s+a)*w+j*p.s+b] += dy[o] / float32(p.k*p.k)
					}
				}
			}
		}
	}
	return y, dx
}

// TestPoolKernels checks the pooling kernels against naivePool (forward and gradient, float32
// tolerance) and that their output is bit-identical whatever the number of workers.
func TestPoolKernels(t *testing.T) {
	for _, tc := range []struct {
		name            string
		p               pool2d
		planes, h, w    int
		ties            bool // integer-valued inputs: many equal maxima in a window
		wantTolerance32 float64
	}{
		{"max2/1 cnn-tramer-boneh conv1", pool2d{max: true, k: 2, s: 1}, 64 * 16, 14, 14, false, 0},
		{"max2/1 ties", pool2d{max: true, k: 2, s: 1}, 40, 5, 5, true, 0},
		{"max3/2 odd", pool2d{max: true, k: 3, s: 2}, 30, 9, 7, false, 0},
		{"avg2/2 lenet5", pool2d{k: 2, s: 2}, 64 * 6, 28, 28, false, 1e-6},
		{"avg3/1", pool2d{k: 3, s: 1}, 50, 6, 8, false, 1e-6},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rng := rand.New(rand.NewPCG(4, 5))
			oh, ow := tc.p.outHW(tc.h, tc.w)
			x := make([]float32, tc.planes*tc.h*tc.w)
			dy := make([]float32, tc.planes*oh*ow)
			for i := range x {
				x[i] = float32(rng.NormFloat64())
				if tc.ties {
					x[i] = float32(rng.IntN(3))
				}
			}
			for i := range dy {
				dy[i] = float32(rng.NormFloat64())
			}
			wantY, wantDX := naivePool(tc.p, x, dy, tc.planes, tc.h, tc.w)
			var firstY, firstDX []float32
			for _, workers := range []int{1, 2, 3, 7} {
				y := make([]float32, len(wantY))
				dx := make([]float32, len(x))
				tc.p.forward(x, y, nil, tc.planes, tc.h, tc.w, workers)
				tc.p.backward(x, dy, dx, tc.planes, tc.h, tc.w, workers)
				if d := maxRelDiff(y, wantY); d > tc.wantTolerance32 {
					t.Errorf("workers %d: forward differs from the naive reference by %g relative", workers, d)
				}
				if d := maxRelDiff(dx, wantDX); d > tc.wantTolerance32 {
					t.Errorf("workers %d: gradient differs from the naive reference by %g relative", workers, d)
				}
				if tc.p.max {
					// Stored indices: the same output and gradient, bit for bit.
					ya, dxa, arg := make([]float32, len(y)), make([]float32, len(x)), make([]int32, len(y))
					tc.p.forward(x, ya, arg, tc.planes, tc.h, tc.w, workers)
					tc.p.backwardArg(arg, dy, dxa, tc.planes, tc.h, tc.w, workers)
					if !slices.Equal(ya, y) || !slices.Equal(dxa, dx) {
						t.Errorf("workers %d: forward or gradient through stored indices differs from recomputing them", workers)
					}
				}
				if firstY == nil {
					firstY, firstDX = y, dx
				} else if !slices.Equal(y, firstY) || !slices.Equal(dx, firstDX) {
					t.Errorf("workers %d: output not bit-identical to the one-worker output", workers)
				}
			}
		})
	}
}

// TestMaxPoolNaN checks that a NaN in a window makes the max-pooled output NaN, so that the
// step fails on a non-finite loss rather than dropping it, and that the window's gradient still
// lands, whole, on one element of the window, on the general and the 2×2 stride-1 kernels.
func TestMaxPoolNaN(t *testing.T) {
	nan := float32(math.NaN())
	for _, p := range []pool2d{{max: true, k: 2, s: 2}, {max: true, k: 2, s: 1}} {
		for _, x := range [][]float32{{nan, 1, 2, 0}, {1, 0, nan, 3}, {nan, nan, nan, nan}} {
			for _, stored := range []bool{false, true} {
				y, dx := make([]float32, 1), make([]float32, 4)
				if stored {
					arg := make([]int32, 1)
					p.forward(x, y, arg, 1, 2, 2, 1)
					p.backwardArg(arg, []float32{5}, dx, 1, 2, 2, 1)
				} else {
					p.forward(x, y, nil, 1, 2, 2, 1)
					p.backward(x, []float32{5}, dx, 1, 2, 2, 1)
				}
				if y[0] == y[0] {
					t.Errorf("%v on %v (stored indices %v): output %v, want NaN", p, x, stored, y[0])
				}
				var sum float32
				for _, v := range dx {
					sum += v
				}
				if sum != 5 {
					t.Errorf("%v on %v (stored indices %v): gradient %v, want 5 on one element", p, x, stored, dx)
				}
			}
		}
	}
}

func maxRelDiff(got, want []float32) float64 {
	var worst float64
	for i := range got {
		d := math.Abs(float64(got[i]) - float64(want[i]))
		worst = max(worst, d/max(1, math.Abs(float64(want[i]))))
	}
	return worst
}

// BenchmarkMaxPoolConv1 is max pooling 2/1 of cnn-tramer-boneh's first conv output at batch
// 256 (256·16 planes of 14×14), forward and backward, with the backward pass recomputing each
// window's maximum or scattering through the indices the forward pass stored.
func BenchmarkMaxPoolConv1(b *testing.B) {
	p := pool2d{max: true, k: 2, s: 1}
	planes, h, w := 256*16, 14, 14
	oh, ow := p.outHW(h, w)
	rng := rand.New(rand.NewPCG(1, 2))
	x, dx := make([]float32, planes*h*w), make([]float32, planes*h*w)
	y, dy := make([]float32, planes*oh*ow), make([]float32, planes*oh*ow)
	arg := make([]int32, len(y))
	for i := range x {
		x[i] = float32(rng.NormFloat64())
	}
	b.Run("recompute", func(b *testing.B) {
		for b.Loop() {
			p.forward(x, y, nil, planes, h, w, 0)
			clear(dx)
			p.backward(x, dy, dx, planes, h, w, 0)
		}
	})
	b.Run("stored", func(b *testing.B) {
		for b.Loop() {
			p.forward(x, y, arg, planes, h, w, 0)
			clear(dx)
			p.backwardArg(arg, dy, dx, planes, h, w, 0)
		}
	})
}
