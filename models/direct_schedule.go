package models

import (
	"math"
	"runtime"
	"sync"
	"sync/atomic"

	"gonum.org/v1/gonum/blas"
	"gonum.org/v1/gonum/blas/blas32"
	"gonum.org/v1/gonum/blas/blas64"

	"github.com/dptrain/dptrain/data"
	"github.com/dptrain/dptrain/internal/kernels"
)

// The direct executor's schedule: a batch cut into chunks, a chunk into blocks that run on
// up to GOMAXPROCS goroutines, the dense layers' clipped-gradient GEMMs cut into fixed slices.

// directSliceRows is the number of weight rows one task of a dense layer's clipped-gradient
// GEMM computes.
const directSliceRows = 128

// parallel calls f(t, worker) for every task t < tasks on up to GOMAXPROCS goroutines, each
// task on exactly one goroutine, and returns when all have returned.
func (dr *direct) parallel(tasks int, f func(t, worker int)) {
	workers := min(runtime.GOMAXPROCS(0), tasks)
	for w := range max(workers, 1) {
		dr.scratch(w)
	}
	if workers <= 1 {
		for t := range tasks {
			f(t, 0)
		}
		return
	}
	var next atomic.Int64
	var wg sync.WaitGroup
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				t := int(next.Add(1) - 1)
				if t >= tasks {
					return
				}
				f(t, w)
			}
		}()
	}
	wg.Wait()
}

// denseTask is one slice of a dense layer's clipped-gradient GEMM: weight rows [r0, r1) of
// op i's layer, and its bias when bias is set.
type denseTask struct {
	i, r0, r1 int
	bias      bool
}

// denseTasks lists the tasks of the chunk's dense-layer GEMMs, fixed by the network alone.
func (dr *direct) denseTasks() []denseTask {
	var ts []denseTask
	for i := range dr.ops {
		if dr.ops[i].kind != opDense {
			continue
		}
		l := &dr.nw.plan.layers[dr.ops[i].p]
		for r0 := 0; r0 < l.d; r0 += directSliceRows {
			ts = append(ts, denseTask{i: i, r0: r0, r1: min(r0+directSliceRows, l.d)})
		}
		if l.b >= 0 {
			ts = append(ts, denseTask{i: i, bias: true})
		}
	}
	return ts
}

// blocks runs samples [start, start+m) of b in blocks of directBlock on up to GOMAXPROCS
// goroutines: load, forward and loss, then, when after is not nil, the backward pass and
// after(block, first sample, samples, scratch). It adds the blocks' statistics to st in block
// order, returns the number of blocks, and the first block's error in block order.
func (dr *direct) blocks(b data.Batch, start, m int, after func(k, lo, mb int, s *directScratch) error, st *data.Stats, pred []int32) (int, error) {
	nb := (m + dr.block - 1) / dr.block
	for k := range nb {
		dr.stats[k], dr.errs[k] = data.Stats{}, nil
	}
	dr.parallel(nb, func(k, w int) {
		s := &dr.work[w]
		if s.err = s.dnErr; s.err != nil {
			dr.errs[k] = s.err
			return
		}
		lo := k * dr.block
		mb := min(dr.block, m-lo)
		dr.load(b, start, lo, mb)
		dr.forward(lo, mb, s)
		dr.loss(b, start, lo, mb, after != nil, &dr.stats[k], pred)
		if after != nil && s.err == nil {
			dr.backward(lo, mb, s)
			if s.err == nil {
				dr.errs[k] = after(k, lo, mb, s)
			}
		}
		if s.err != nil {
			dr.errs[k] = s.err
		}
	})
	for k := range nb {
		if dr.errs[k] != nil {
			return nb, dr.errs[k]
		}
		st.Add(dr.stats[k])
	}
	return nb, nil
}

// chunk runs samples [start, start+m) of b: forward (and with grad the backward pass and
// clipping), adding the chunk's loss and accuracy to st, predictions to pred, and the clipped
// gradient sum to grad.
func (dr *direct) chunk(b data.Batch, start, m int, grad []float32, clip float64, needNorms bool, norms []float64, st *data.Stats, pred []int32) error {
	var after func(k, lo, mb int, s *directScratch) error
	if grad != nil {
		after = func(k, lo, mb int, s *directScratch) error {
			return dr.clipBlock(start, lo, mb, clip, needNorms, norms, dr.part[k], &dr.stats[k], s)
		}
	}
	nb, err := dr.blocks(b, start, m, after, st, pred)
	if err != nil || grad == nil {
		return err
	}
	// Conv and GroupNorm layers: the blocks' float64 partial sums in block order, back to
	// parameter row order.
	g64 := dr.g64
	for j, off := range dr.partOff {
		if off < 0 {
			continue
		}
		l := &dr.nw.plan.layers[j]
		if l.kind == kindGN {
			for k := range nb {
				for c, v := range dr.part[k][off : off+l.c] {
					g64[l.w+c] += v
				}
				for c, v := range dr.part[k][off+l.c : off+2*l.c] {
					g64[l.b+c] += v
				}
			}
			continue
		}
		for r, pr := range dr.perm[j] {
			dst := g64[l.w+int(pr)*l.k : l.w+int(pr+1)*l.k]
			for k := range nb {
				for c, v := range dr.part[k][off+r*l.k : off+(r+1)*l.k] {
					dst[c] += v
				}
			}
		}
		if l.b >= 0 {
			dst := g64[l.b : l.b+l.k]
			for k := range nb {
				for c, v := range dr.part[k][off+l.d*l.k : off+l.d*l.k+l.k] {
					dst[c] += v
				}
			}
		}
	}
	// Dense layers: Aᵀ·G over the chunk (G already scaled), in float64, one task per slice of
	// the weight's rows.
	tasks := dr.denseTasks()
	dr.parallel(len(tasks), func(t, w int) {
		tk := tasks[t]
		a, g, l := dr.layerAG(tk.i, 0, m)
		s := &dr.work[w]
		if tk.bias {
			dst := g64[l.b : l.b+l.k]
			for r := 0; r < m; r++ {
				for c, v := range g[r*l.k : (r+1)*l.k] {
					dst[c] += float64(v)
				}
			}
			return
		}
		cols := tk.r1 - tk.r0
		if math.IsInf(clip, 1) {
			// No clipping: nothing is released privately, so the product may round in
			// float32.
			s.wtmp = kernels.Grow(s.wtmp, cols*l.k)
			w := s.wtmp[:cols*l.k]
			blas32.Gemm(blas.Trans, blas.NoTrans, 1, blas32.General{Rows: m, Cols: cols, Stride: l.d, Data: a[tk.r0:]},
				general(m, l.k, g), 0, general(cols, l.k, w))
			for t, v := range w {
				g64[l.w+tk.r0*l.k+t] += float64(v)
			}
			return
		}
		blas64.Gemm(blas.Trans, blas.NoTrans, 1, blas64.General{Rows: m, Cols: cols, Stride: l.d, Data: dr.a64[tk.i][tk.r0:]},
			blas64.General{Rows: m, Cols: l.k, Stride: l.k, Data: dr.g64d[tk.i][:m*l.k]}, 1,
			blas64.General{Rows: cols, Cols: l.k, Stride: l.k, Data: g64[l.w+tk.r0*l.k : l.w+tk.r1*l.k]})
	})
	return nil
}

// setPatches decides which conv layers' patch matrices the forward pass writes for a pass that
// computes gradients (grad) and per-example norms (needNorms): every one without oneDNN; with
// it, only those that a norm by the Gram identity or an unclipped sum reads (materialise and
// sampleGrad take oneDNN's backward-weights result instead).
func (dr *direct) setPatches(grad, needNorms bool) {
	if dr.patches == nil {
		dr.patches = make([]bool, len(dr.nw.plan.layers))
	}
	for j := range dr.patches {
		l := &dr.nw.plan.layers[j]
		dr.patches[j] = dr.dn == nil || grad && !(needNorms && dr.keepSample(l))
	}
}

// run processes b in chunks of at most the network's Chunk samples.
func (dr *direct) run(b data.Batch, grad []float32, clip float64, needNorms bool, norms []float64, pred []int32) (data.Stats, error) {
	var st data.Stats
	dr.alloc(min(dr.nw.res.chunk, max(b.N, 1)))
	if err := dr.refreshWeights(); err != nil {
		return data.Stats{}, err
	}
	dr.setPatches(grad != nil, needNorms)
	if grad != nil {
		dr.g64 = kernels.GrowF64(dr.g64, len(grad))
		clear(dr.g64)
	}
	for start := 0; start < b.N; start += dr.nw.res.chunk {
		m := min(dr.nw.res.chunk, b.N-start)
		if err := dr.chunk(b, start, m, grad, clip, needNorms, norms, &st, pred); err != nil {
			return data.Stats{}, err
		}
	}
	if grad != nil {
		// The sum's one rounding to float32.
		for t, v := range dr.g64 {
			grad[t] = float32(v)
		}
	}
	return st, nil
}
