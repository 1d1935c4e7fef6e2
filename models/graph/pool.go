package graph

import (
	"math"
	"runtime"
	"sync"

	"github.com/dptrain/dptrain/internal/kernels"
)

// Pooling kernels on (N, C, H, W) data, shared by poolOp and poolDiffOp (ops.go). Every
// (sample, channel) plane is pooled independently, so the planes are split across goroutines:
// each plane is computed by exactly one goroutine with the same instructions whatever the
// split, and the results are bit-identical for any number of workers (pool_test.go checks it).

// minPlaneWork is the number of input elements below which a pooling call stays on one
// goroutine: starting a goroutine costs about a microsecond, pooling one element a nanosecond.
const minPlaneWork = 1 << 15

// forPlanes calls f on consecutive ranges [lo, hi) of planes that together cover [0, planes),
// on up to workers goroutines (workers ≤ 0: GOMAXPROCS), and returns when all have returned.
// planeSize is the number of elements a plane holds, used to keep small calls serial.
func forPlanes(planes, planeSize, workers int, f func(lo, hi int)) {
	if workers <= 0 {
		workers = runtime.GOMAXPROCS(0)
	}
	workers = min(workers, planes, max(1, planes*planeSize/minPlaneWork))
	if workers <= 1 {
		f(0, planes)
		return
	}
	var wg sync.WaitGroup
	for w := range workers {
		lo, hi := planes*w/workers, planes*(w+1)/workers
		wg.Add(1)
		go func() {
			defer wg.Done()
			f(lo, hi)
		}()
	}
	wg.Wait()
}

// forward writes the pooled planes of x (n·c planes of h×w) to y (planes of oh×ow). For max
// pooling with arg != nil it also writes to arg, for each output element, the index within its
// input plane of the element the window's gradient goes to (the one backward would pick), so
// that backwardArg scatters through it without comparing again.
func (p pool2d) forward(x, y []float32, arg []int32, planes, h, w, workers int) {
	oh, ow := p.outHW(h, w)
	forPlanes(planes, h*w, workers, func(lo, hi int) {
		rows := make([]float32, 2*ow) // maxPlane2's and maxPlane2Arg's scratch, one per goroutine
		var idx []int32
		if arg != nil {
			idx = make([]int32, 4*ow) // maxPlane2Arg's
		}
		for pl := lo; pl < hi; pl++ {
			xp, yp := x[pl*h*w:(pl+1)*h*w], y[pl*oh*ow:(pl+1)*oh*ow]
			switch {
			case p.max && p.k == 2 && p.s == 1 && arg != nil:
				maxPlane2Arg(xp, yp, arg[pl*oh*ow:(pl+1)*oh*ow], w, oh, ow, rows, idx)
			case p.max && p.k == 2 && p.s == 1:
				maxPlane2(xp, yp, w, oh, ow, rows)
			case p.max && arg != nil:
				p.maxPlaneArg(xp, yp, arg[pl*oh*ow:(pl+1)*oh*ow], w, oh, ow)
			case p.max:
				p.maxPlane(xp, yp, w, oh, ow)
			default:
				p.avgPlane(xp, yp, w, oh, ow)
			}
		}
	})
}

// backwardArg adds to dx (zeroed by the caller) max pooling's gradient given dy and the
// indices forward stored in arg: dy's element o goes to element arg[o] of its input plane.
func (p pool2d) backwardArg(arg []int32, dy, dx []float32, planes, h, w, workers int) {
	oh, ow := p.outHW(h, w)
	forPlanes(planes, h*w, workers, func(lo, hi int) {
		for pl := lo; pl < hi; pl++ {
			dxp := dx[pl*h*w : (pl+1)*h*w]
			ap := arg[pl*oh*ow : (pl+1)*oh*ow]
			for o, g := range dy[pl*oh*ow : (pl+1)*oh*ow] {
				dxp[ap[o]] += g
			}
		}
	})
}

// maxPlaneArg is maxPlane that also stores each window's first maximum in row-major order (the
// element maxPlaneDiff picks) in ap.
func (p pool2d) maxPlaneArg(xp, yp []float32, ap []int32, w, oh, ow int) {
	for i := 0; i < oh; i++ {
		for j := 0; j < ow; j++ {
			o := i*p.s*w + j*p.s
			acc, best, bi := float32(math.Inf(-1)), float32(math.Inf(-1)), o
			for a := 0; a < p.k; a++ {
				r := o + a*w
				for b, v := range xp[r : r+p.k] {
					acc = max(acc, v)
					if v > best {
						best, bi = v, r+b
					}
				}
			}
			yp[i*ow+j], ap[i*ow+j] = acc, int32(bi)
		}
	}
}

// maxPlane is max pooling of one plane: the largest element of each window, NaN if the window
// holds a NaN (Go's max), so that a non-finite activation reaches the example's gradient norm,
// which clips the example to zero, instead of vanishing inside the window.
func (p pool2d) maxPlane(xp, yp []float32, w, oh, ow int) {
	ninf := float32(math.Inf(-1))
	for i := 0; i < oh; i++ {
		yr := yp[i*ow : (i+1)*ow]
		for j := range yr {
			yr[j] = ninf
		}
		for a := 0; a < p.k; a++ {
			xr := xp[(i*p.s+a)*w:]
			for j := range yr {
				acc := yr[j]
				for _, v := range xr[j*p.s : j*p.s+p.k] {
					acc = max(acc, v)
				}
				yr[j] = acc
			}
		}
	}
}

// avgPlane is average pooling of one plane.
func (p pool2d) avgPlane(xp, yp []float32, w, oh, ow int) {
	inv := 1 / float32(p.k*p.k)
	for i := 0; i < oh; i++ {
		yr := yp[i*ow : (i+1)*ow]
		for j := range yr {
			var acc float32
			for a := 0; a < p.k; a++ {
				for _, v := range xp[(i*p.s+a)*w+j*p.s : (i*p.s+a)*w+j*p.s+p.k] {
					acc += v
				}
			}
			yr[j] = acc * inv
		}
	}
}

// backward adds to dx (zeroed by the caller) the gradient with respect to x of the pooled
// output, given its gradient dy: each window's gradient goes to its first maximum in row-major
// order, or is spread evenly over the window for average pooling. (A window holding a NaN has a
// NaN output, which makes the example's norm NaN and clips it to zero; its gradient goes to one
// element of the window.)
func (p pool2d) backward(x, dy, dx []float32, planes, h, w, workers int) {
	oh, ow := p.outHW(h, w)
	forPlanes(planes, h*w, workers, func(lo, hi int) {
		rows := make([]int32, 2*ow) // maxPlane2Diff's scratch, one per goroutine
		for pl := lo; pl < hi; pl++ {
			xp, dxp, dyp := x[pl*h*w:(pl+1)*h*w], dx[pl*h*w:(pl+1)*h*w], dy[pl*oh*ow:(pl+1)*oh*ow]
			switch {
			case p.max && p.k == 2 && p.s == 1:
				maxPlane2Diff(xp, dyp, dxp, w, oh, ow, rows)
			case p.max:
				p.maxPlaneDiff(xp, dyp, dxp, w, oh, ow)
			default:
				p.avgPlaneDiff(dyp, dxp, w, oh, ow)
			}
		}
	})
}

func (p pool2d) maxPlaneDiff(xp, dyp, dxp []float32, w, oh, ow int) {
	for i := 0; i < oh; i++ {
		for j, g := range dyp[i*ow : (i+1)*ow] {
			o := i*p.s*w + j*p.s
			best, bi := float32(math.Inf(-1)), o
			for a := 0; a < p.k; a++ {
				r := o + a*w
				for b, v := range xp[r : r+p.k] {
					if v > best {
						best, bi = v, r+b
					}
				}
			}
			dxp[bi] += g
		}
	}
}

func (p pool2d) avgPlaneDiff(dyp, dxp []float32, w, oh, ow int) {
	inv := 1 / float32(p.k*p.k)
	for i := 0; i < oh; i++ {
		for j, g := range dyp[i*ow : (i+1)*ow] {
			g *= inv
			for a := 0; a < p.k; a++ {
				r := (i*p.s+a)*w + j*p.s
				row := dxp[r : r+p.k]
				for b := range row {
					row[b] += g
				}
			}
		}
	}
}

// maxPlane2 is maxPlane for 2×2 windows with stride 1 (cnn-tramer-boneh's pooling), made
// separable: the maximum of each horizontal pair of an input row, then of two such pairs one
// row apart. Go's max is branch-free, so random inputs cost no mispredicted branches. rows is
// scratch of 2·ow elements.
func maxPlane2(xp, yp []float32, w, oh, ow int, rows []float32) {
	prev, cur := rows[:ow], rows[ow:2*ow]
	pairs := func(dst, row []float32) {
		row = row[:len(dst)+1]
		for j := range dst {
			dst[j] = max(row[j], row[j+1])
		}
	}
	pairs(prev, xp[:w])
	for i := 0; i < oh; i++ {
		pairs(cur, xp[(i+1)*w:(i+2)*w])
		yr := yp[i*ow : (i+1)*ow]
		for j := range yr {
			yr[j] = max(prev[j], cur[j])
		}
		prev, cur = cur, prev
	}
}

// maxPlane2Diff is maxPlaneDiff for 2×2 windows with stride 1: the first maximum of each
// horizontal pair (the left one unless the right one is strictly larger), then of the two
// pairs, which is the window's first maximum in row-major order. rows is scratch of 2·ow
// elements.
func maxPlane2Diff(xp, dyp, dxp []float32, w, oh, ow int, rows []int32) {
	prev, cur := rows[:ow], rows[ow:2*ow]
	pairs := func(dst []int32, o int) {
		row := xp[o : o+len(dst)+1]
		for j := range dst {
			k := j
			if row[j+1] > row[j] {
				k = j + 1
			}
			dst[j] = int32(o + k)
		}
	}
	pairs(prev, 0)
	for i := 0; i < oh; i++ {
		pairs(cur, (i+1)*w)
		for j, g := range dyp[i*ow : (i+1)*ow] {
			k := prev[j]
			if xp[cur[j]] > xp[k] {
				k = cur[j]
			}
			dxp[k] += g
		}
		prev, cur = cur, prev
	}
}

// maxPlane2Arg is maxPlane2 that also stores in ap, for each window, the index of its first
// maximum in row-major order (the element maxPlane2Diff picks when the window holds no NaN):
// the first maximum of each horizontal pair, then of the two pairs. The value is Go's max (NaN
// if the window holds one) as in maxPlane2. The comparisons are made on orderedKey, integers,
// so that the compiler selects without branches (random inputs would mispredict half of
// them). rows is scratch of 2·ow elements and idx of 4·ow.
func maxPlane2Arg(xp, yp []float32, ap []int32, w, oh, ow int, rows []float32, idx []int32) {
	pm, cm := rows[:ow], rows[ow:2*ow]
	pk, ck := idx[:ow], idx[ow:2*ow] // key of each pair's first maximum
	pi, ci := idx[2*ow:3*ow], idx[3*ow:4*ow]
	pairs := func(dm []float32, dk, di []int32, o int) {
		row := xp[o : o+len(dm)+1]
		dk, di = dk[:len(dm)], di[:len(dm)]
		for j := range dm {
			a, b := row[j], row[j+1]
			ka, kb := kernels.OrderedKey(a), kernels.OrderedKey(b)
			right := int32(uint64(int64(ka)-int64(kb)) >> 63) // 1 if kb > ka
			dm[j], dk[j], di[j] = max(a, b), max(ka, kb), int32(o+j)+right
		}
	}
	pairs(pm, pk, pi, 0)
	for i := 0; i < oh; i++ {
		pairs(cm, ck, ci, (i+1)*w)
		yr, ar := yp[i*ow:(i+1)*ow], ap[i*ow:(i+1)*ow]
		for j := range yr {
			k := pi[j]
			if ck[j] > pk[j] {
				k = ci[j]
			}
			yr[j], ar[j] = max(pm[j], cm[j]), k
		}
		pm, cm = cm, pm
		pk, ck = ck, pk
		pi, ci = ci, pi
	}
}
