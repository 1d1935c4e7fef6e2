package models

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"
)

// naivePool is a direct reference for pool2d: one output element at a time, every window
// scanned in row-major order; max pooling's output is the largest non-NaN element and its
// gradient goes to the first such maximum (to the first element if none exceeds −Inf).
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
							top, bi = x[idx], idx
						}
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
				tc.p.forward(x, y, tc.planes, tc.h, tc.w, workers)
				tc.p.backward(x, dy, dx, tc.planes, tc.h, tc.w, workers)
				if d := maxRelDiff(y, wantY); d > tc.wantTolerance32 {
					t.Errorf("workers %d: forward differs from the naive reference by %g relative", workers, d)
				}
				if d := maxRelDiff(dx, wantDX); d > tc.wantTolerance32 {
					t.Errorf("workers %d: gradient differs from the naive reference by %g relative", workers, d)
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

// TestMaxPoolNaN pins what max pooling does with NaN inputs, on the general and the 2×2
// stride-1 kernels: the forward pass skips them and the gradient goes to the element the
// forward pass chose (the first one for a window of NaNs only).
func TestMaxPoolNaN(t *testing.T) {
	nan := float32(math.NaN())
	for _, tc := range []struct {
		name   string
		p      pool2d
		x      []float32
		h, w   int
		wantY  []float32
		wantDX []float32
	}{
		{"2/2 NaN first", pool2d{max: true, k: 2, s: 2}, []float32{nan, 1, 2, 0}, 2, 2, []float32{2}, []float32{0, 0, 5, 0}},
		{"2/1 NaN first", pool2d{max: true, k: 2, s: 1}, []float32{nan, 1, 2, 0}, 2, 2, []float32{2}, []float32{0, 0, 5, 0}},
		{"2/1 NaN lower left", pool2d{max: true, k: 2, s: 1}, []float32{1, 0, nan, 3}, 2, 2, []float32{3}, []float32{0, 0, 0, 5}},
		{"2/1 all NaN", pool2d{max: true, k: 2, s: 1}, []float32{nan, nan, nan, nan}, 2, 2, []float32{float32(math.Inf(-1))}, []float32{5, 0, 0, 0}},
		{"2/2 all NaN", pool2d{max: true, k: 2, s: 2}, []float32{nan, nan, nan, nan}, 2, 2, []float32{float32(math.Inf(-1))}, []float32{5, 0, 0, 0}},
	} {
		dy := []float32{5}
		y, dx := make([]float32, 1), make([]float32, len(tc.x))
		tc.p.forward(tc.x, y, 1, tc.h, tc.w, 1)
		tc.p.backward(tc.x, dy, dx, 1, tc.h, tc.w, 1)
		if !slices.Equal(y, tc.wantY) {
			t.Errorf("%s: forward = %v, want %v", tc.name, y, tc.wantY)
		}
		if !slices.Equal(dx, tc.wantDX) {
			t.Errorf("%s: gradient = %v, want %v", tc.name, dx, tc.wantDX)
		}
		if ry, rdx := naivePool(tc.p, tc.x, dy, 1, tc.h, tc.w); !slices.Equal(ry, y) || !slices.Equal(rdx, dx) {
			t.Errorf("%s: naive reference gives %v, %v", tc.name, ry, rdx)
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
// 256 (256·16 planes of 14×14), forward and backward.
func BenchmarkMaxPoolConv1(b *testing.B) {
	p := pool2d{max: true, k: 2, s: 1}
	planes, h, w := 256*16, 14, 14
	oh, ow := p.outHW(h, w)
	rng := rand.New(rand.NewPCG(1, 2))
	x, dx := make([]float32, planes*h*w), make([]float32, planes*h*w)
	y, dy := make([]float32, planes*oh*ow), make([]float32, planes*oh*ow)
	for i := range x {
		x[i] = float32(rng.NormFloat64())
	}
	b.ResetTimer()
	for range b.N {
		p.forward(x, y, planes, h, w, 0)
		clear(dx)
		p.backward(x, dy, dx, planes, h, w, 0)
	}
}
