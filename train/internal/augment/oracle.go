package augment

import (
	"crypto/sha256"
	"encoding/binary"
	"fmt"
	"math"
	"math/rand/v2"
	"runtime"
	"sync"

	"github.com/dptrain/dptrain/data"
	"github.com/dptrain/dptrain/internal/kernels"
	"github.com/dptrain/dptrain/optim"
)

// maxRowValues bounds the per-copy gradient buffer of one chunk (chunk examples × K copies ×
// parameters float32 values: 64 MiB).
const maxRowValues = 1 << 24

// maxChunk is the most examples augmented and differentiated in one call of the inner oracle.
const maxChunk = 32

// Oracle is the gradient oracle of a model trained with augmentation multiplicity: the inner
// oracle's model seen through Config's augmentation. It is not safe for concurrent use.
type Oracle struct {
	inner optim.GradientOracle
	cfg   Config
	key   [32]byte
	round func() uint64

	dim     int
	x       []float32 // the augmented chunk, chunk·K rows
	y       []int32
	rows    []float32 // the copies' gradients, chunk·K·P
	seen    []bool    // whether the inner oracle passed a copy's gradient (a finite one)
	scratch []float32 // the inner oracle's sum, not used
	g64     []float64 // the sum over examples, in float64
}

// New returns inner seen through cfg's augmentation, drawing it from key (32 bytes of a secret
// stream) and round, which numbers the calls that must draw afresh (a trainer's step count):
// see the package documentation.
func New(inner optim.GradientOracle, cfg Config, key [32]byte, round func() uint64) (*Oracle, error) {
	if err := cfg.Check(); err != nil {
		return nil, err
	}
	if round == nil {
		return nil, fmt.Errorf("augment: no round function: the augmentations would repeat at every step")
	}
	return &Oracle{inner: inner, cfg: cfg, key: key, round: round, dim: cfg.Dim()}, nil
}

// Params returns the inner oracle's parameters.
func (o *Oracle) Params() []float32 { return o.inner.Params() }

// ClippedGradSum writes Σ_i clip_C(ḡ_i) into grad, ḡ_i = (1/K) Σ_k g(aug_{i,k}(x_i)), and ‖ḡ_i‖
// into norms (+Inf for an example with a non-finite copy). Each clipped average is scaled by
// optim.ClipL2, whose result has norm at most clip. Stats: N is b.N, Clipped and NonFinite
// count examples; Loss and Correct are those of the copies divided by K (Correct rounded to
// the nearest integer): the mean over the augmented copies. With K = 1 the inner oracle's
// ClippedGradSum runs on the augmented batch (on b itself without crops or flips), and its
// stats are returned.
func (o *Oracle) ClippedGradSum(b data.Batch, clip float64, grad []float32, norms []float64) (data.Stats, error) {
	if math.IsNaN(clip) || clip <= 0 {
		return data.Stats{}, fmt.Errorf("augment: clip norm %v must be positive (+Inf for no clipping)", clip)
	}
	if norms != nil && len(norms) < b.N {
		return data.Stats{}, fmt.Errorf("augment: norms has length %d, need %d", len(norms), b.N)
	}
	if o.cfg.K() == 1 {
		ab, err := o.single(b)
		if err != nil {
			return data.Stats{}, err
		}
		return o.inner.ClippedGradSum(ab, clip, grad, norms)
	}
	if norms != nil {
		for i := range norms[:b.N] {
			norms[i] = math.Inf(1) // left for an example with a non-finite copy
		}
	}
	return o.averaged(b, grad, func(i int, g []float32) (clipped, ok bool) {
		norm := optim.Norm2(g)
		if norms != nil {
			norms[i] = norm
		}
		if math.IsNaN(norm) || math.IsInf(norm, 0) {
			return false, false
		}
		c, err := optim.ClipL2(g, clip)
		return c, err == nil
	})
}

// PerSampleGradSum calls f(i, ḡ_i) for every example whose averaged gradient ḡ_i is finite
// (concurrently for different i) and writes the sum of the transformed averages into grad; an
// example with a non-finite copy or average is skipped and counted in Stats.NonFinite. Stats
// as for ClippedGradSum (Clipped is 0: f does the clipping). With K = 1 the inner oracle's
// PerSampleGradSum runs on the augmented batch.
func (o *Oracle) PerSampleGradSum(b data.Batch, f func(i int, g []float32), grad []float32) (data.Stats, error) {
	if o.cfg.K() == 1 {
		ab, err := o.single(b)
		if err != nil {
			return data.Stats{}, err
		}
		return o.inner.PerSampleGradSum(ab, f, grad)
	}
	return o.averaged(b, grad, func(i int, g []float32) (clipped, ok bool) {
		if n := optim.Norm2(g); math.IsNaN(n) || math.IsInf(n, 0) {
			return false, false
		}
		if f != nil {
			f(i, g)
		}
		return false, true
	})
}

// check returns an error for a batch whose rows are not of the configured shape.
func (o *Oracle) check(b data.Batch) error {
	if r := o.cfg.Row(); b.N < 0 || len(b.X) < b.N*r || len(b.Y) < b.N {
		return fmt.Errorf("augment: a batch of %d examples of %d values needs %d inputs and %d labels, has %d and %d", b.N, r, b.N*r, b.N, len(b.X), len(b.Y))
	}
	return nil
}

// single returns b with every example replaced by one augmented copy (b itself without crops
// or flips).
func (o *Oracle) single(b data.Batch) (data.Batch, error) {
	if !o.cfg.Transforms() {
		return b, nil
	}
	if err := o.check(b); err != nil {
		return b, err
	}
	o.x = kernels.Grow(o.x, b.N*o.dim)
	o.fill(b, 0, b.N, o.x, o.callKey())
	return data.Batch{X: o.x[:b.N*o.dim], Y: b.Y[:b.N], N: b.N}, nil
}

// callKey is SHA-256 of the key and the round: a new key for every round.
func (o *Oracle) callKey() [32]byte {
	h := sha256.New()
	h.Write([]byte("dptrain/augment v1\x00"))
	h.Write(o.key[:])
	h.Write(binary.LittleEndian.AppendUint64(nil, o.round()))
	var k [32]byte
	h.Sum(k[:0])
	return k
}

// exampleRand returns example (x, y)'s stream under call key k: ChaCha8 seeded with SHA-256 of
// k, y and x's bits.
func exampleRand(k [32]byte, x []float32, y int32) *rand.Rand {
	h := sha256.New()
	h.Write(k[:])
	var buf [4096]byte
	binary.LittleEndian.PutUint32(buf[:4], uint32(y))
	h.Write(buf[:4])
	for len(x) > 0 {
		n := min(len(x), len(buf)/4)
		for j, v := range x[:n] {
			binary.LittleEndian.PutUint32(buf[4*j:], math.Float32bits(v))
		}
		h.Write(buf[:4*n])
		x = x[n:]
	}
	var seed [32]byte
	h.Sum(seed[:0])
	return rand.New(rand.NewChaCha8(seed))
}

// fill writes the K augmented copies of examples lo..lo+m−1 of b into dst, example by example
// (copy k of example i at row (i−lo)·K + k), in parallel over examples.
func (o *Oracle) fill(b data.Batch, lo, m int, dst []float32, key [32]byte) {
	k, d, row := o.cfg.K(), o.dim, o.cfg.Row()
	parallel(m, func(i int) {
		x := b.X[(lo+i)*row : (lo+i+1)*row]
		if v := o.cfg.Views; v > 0 {
			// Keyed by view 0 alone: it belongs to this example as every view does, and
			// hashing all views would cost Views times as much at every step.
			r := exampleRand(key, x[:d], b.Y[lo+i])
			// Distinct views while c < Views: a random order of them, repeated.
			perm := r.Perm(v)
			for c := range k {
				j := perm[c%v]
				copy(dst[(i*k+c)*d:(i*k+c+1)*d], x[j*d:(j+1)*d])
			}
			return
		}
		r := exampleRand(key, x, b.Y[lo+i])
		for c := range k {
			at := (i*k + c) * d
			o.cfg.Apply(dst[at:at+d], x, o.cfg.Draw(r))
		}
	})
}

// averaged runs the inner PerSampleGradSum on the K copies of a chunk of examples at a time,
// averages each example's K gradients (each divided by K, summed in copy order), and passes
// the average to per (concurrently for different i), which may transform it in place and says
// whether it clipped it and whether it is finite; grad receives the sum of the finite
// transformed averages, accumulated in float64 in example order and rounded once, so the result
// does not depend on the number of goroutines and its rounding is float64's.
func (o *Oracle) averaged(b data.Batch, grad []float32, per func(i int, g []float32) (clipped, ok bool)) (data.Stats, error) {
	if err := o.check(b); err != nil {
		return data.Stats{}, err
	}
	np := len(o.inner.Params())
	if len(grad) != np {
		return data.Stats{}, fmt.Errorf("augment: grad has length %d, the model has %d parameters", len(grad), np)
	}
	o.g64 = kernels.GrowF64(o.g64, np)
	clear(o.g64)
	k, d := o.cfg.K(), o.dim
	chunk := max(1, min(maxChunk, maxRowValues/max(k*np, 1), b.N))
	o.x = kernels.Grow(o.x, chunk*k*d)
	if cap(o.y) < chunk*k {
		o.y = make([]int32, chunk*k)
	}
	o.rows = kernels.Grow(o.rows, chunk*k*np)
	o.scratch = kernels.Grow(o.scratch, np)
	if cap(o.seen) < chunk*k {
		o.seen = make([]bool, chunk*k)
	}
	var st data.Stats
	var inner data.Stats
	key := o.callKey()
	ok := make([]bool, chunk)
	clipped := make([]bool, chunk)
	for lo := 0; lo < b.N; lo += chunk {
		m := min(chunk, b.N-lo)
		rows, seen := o.rows[:m*k*np], o.seen[:m*k]
		clear(seen)
		o.fill(b, lo, m, o.x, key)
		for i := range m {
			for c := range k {
				o.y[i*k+c] = b.Y[lo+i]
			}
		}
		ab := data.Batch{X: o.x[:m*k*d], Y: o.y[:m*k], N: m * k}
		s, err := o.inner.PerSampleGradSum(ab, func(r int, g []float32) {
			copy(rows[r*np:(r+1)*np], g)
			seen[r] = true
		}, o.scratch[:np])
		if err != nil {
			return data.Stats{}, err
		}
		inner.Add(s)
		parallel(m, func(i int) {
			ok[i], clipped[i] = false, false
			for c := range k {
				if !seen[i*k+c] {
					return // a non-finite copy: the average is not finite
				}
			}
			// Each copy is scaled by 1/K before it is added, so that K finite copies never
			// overflow to an infinite average (and for K a power of two the scaling is exact).
			inv := 1 / float32(k)
			avg := rows[i*k*np : (i*k+1)*np]
			for t := range avg {
				avg[t] *= inv
			}
			for c := 1; c < k; c++ {
				cp := rows[(i*k+c)*np : (i*k+c+1)*np]
				for t, v := range cp {
					avg[t] += v * inv
				}
			}
			clipped[i], ok[i] = per(lo+i, avg)
		})
		// Σ over the chunk's examples in order, split over ranges of coordinates.
		parallelRanges(np, func(from, to int) {
			g := o.g64[from:to]
			for i := range m {
				if !ok[i] {
					continue
				}
				avg := rows[i*k*np+from : i*k*np+to]
				for t, v := range avg {
					g[t] += float64(v)
				}
			}
		})
		for i := range m {
			switch {
			case !ok[i]:
				st.NonFinite++
			case clipped[i]:
				st.Clipped++
			}
		}
	}
	for t, v := range o.g64 {
		grad[t] = float32(v)
	}
	st.N = b.N
	st.Loss = inner.Loss / float64(k)
	st.Correct = int(math.Round(float64(inner.Correct) / float64(k)))
	return st, nil
}

// parallel calls f(i) for i < n on up to GOMAXPROCS goroutines.
func parallel(n int, f func(i int)) {
	w := min(runtime.GOMAXPROCS(0), n)
	if w <= 1 {
		for i := range n {
			f(i)
		}
		return
	}
	var wg sync.WaitGroup
	var mu sync.Mutex
	next := 0
	for range w {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				mu.Lock()
				i := next
				next++
				mu.Unlock()
				if i >= n {
					return
				}
				f(i)
			}
		}()
	}
	wg.Wait()
}

// parallelRanges calls f on a split of [0, n) into up to GOMAXPROCS contiguous ranges.
func parallelRanges(n int, f func(from, to int)) {
	w := min(runtime.GOMAXPROCS(0), max(n/4096, 1))
	var wg sync.WaitGroup
	for j := range w {
		from, to := j*n/w, (j+1)*n/w
		wg.Add(1)
		go func() {
			defer wg.Done()
			f(from, to)
		}()
	}
	wg.Wait()
}
