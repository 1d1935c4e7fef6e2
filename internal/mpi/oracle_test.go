package mpi

import (
	"math"
	"math/rand/v2"
	"sync"
	"testing"

	"github.com/dptrain/dptrain/data"
)

// linear is a model whose per-example gradient is the example's features scaled by its
// parameter: enough to see which examples a share computed.
type linear struct{ w []float32 }

func (m *linear) Params() []float32 { return m.w }

func (m *linear) ClippedGradSum(b data.Batch, clip float64, grad []float32, norms []float64) (data.Stats, error) {
	clear(grad)
	d := len(m.w)
	var st data.Stats
	for i := range b.N {
		x := b.X[i*d : (i+1)*d]
		var ss float64
		for j, v := range x {
			g := float64(v) * float64(m.w[j])
			ss += g * g
		}
		n := math.Sqrt(ss)
		if norms != nil {
			norms[i] = n
		}
		s := 1.0
		if n > clip {
			s, st.Clipped = clip/n, st.Clipped+1
		}
		for j, v := range x {
			grad[j] += float32(s * float64(v) * float64(m.w[j]))
		}
		st.N++
		st.Loss += n
	}
	return st, nil
}

func (m *linear) PerSampleGradSum(b data.Batch, f func(int, []float32), grad []float32) (data.Stats, error) {
	clear(grad)
	d := len(m.w)
	g := make([]float32, d)
	for i := range b.N {
		for j := range g {
			g[j] = b.X[i*d+j] * m.w[j]
		}
		f(i, g)
		for j, v := range g {
			grad[j] += v
		}
	}
	return data.Stats{N: b.N}, nil
}

func batchOf(n, d int, seed uint64) data.Batch {
	rng := rand.New(rand.NewPCG(seed, 1))
	b := data.Batch{X: make([]float32, n*d), Y: make([]int32, n), N: n, Index: make([]int, n)}
	for i := range b.X {
		b.X[i] = float32(rng.NormFloat64() * 3)
	}
	for i := range n {
		b.Index[i] = i
	}
	return b
}

// shardedSum runs ClippedGradSum on k in-process ranks and returns every rank's sum, norms
// and statistics.
func shardedSum(t *testing.T, k int, w []float32, b data.Batch, clip float64) ([][]float32, [][]float64, []data.Stats) {
	t.Helper()
	grads, norms, stats := make([][]float32, k), make([][]float64, k), make([]data.Stats, k)
	cs := Local(k)
	var wg sync.WaitGroup
	errs := make([]error, k)
	for r := range k {
		wg.Add(1)
		go func() {
			defer wg.Done()
			o := &Sharded{Inner: &linear{w: w}, Comm: cs[r]}
			grads[r], norms[r] = make([]float32, len(w)), make([]float64, b.N)
			stats[r], errs[r] = o.ClippedGradSum(b, clip, grads[r], norms[r])
		}()
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	return grads, norms, stats
}

// Every rank gets the same sum, which is the single-process sum up to float32 rounding, with
// every example's norm and the whole batch's statistics; batches smaller than the group work.
func TestShardedEqualsOneProcess(t *testing.T) {
	w := []float32{1, -0.5, 2, 0.25, 1}
	for _, k := range []int{1, 2, 3, 4} {
		for _, n := range []int{1, 2, 3, 33, 257} {
			b := batchOf(n, len(w), uint64(n))
			want, wantNorms := make([]float32, len(w)), make([]float64, n)
			wantSt, _ := (&linear{w: w}).ClippedGradSum(b, 1, want, wantNorms)
			grads, norms, stats := shardedSum(t, k, w, b, 1)
			for r := range k {
				for j := range want {
					if math.Float32bits(grads[r][j]) != math.Float32bits(grads[0][j]) {
						t.Fatalf("k=%d n=%d: rank %d differs from rank 0", k, n, r)
					}
					if d := math.Abs(float64(grads[r][j] - want[j])); d > 1e-5*float64(n) {
						t.Errorf("k=%d n=%d: coordinate %d = %v, one process %v", k, n, j, grads[r][j], want[j])
					}
				}
				for i := range wantNorms {
					if norms[r][i] != wantNorms[i] {
						t.Fatalf("k=%d n=%d: norm %d = %v, want %v", k, n, i, norms[r][i], wantNorms[i])
					}
				}
				if stats[r].N != wantSt.N || stats[r].Clipped != wantSt.Clipped {
					t.Errorf("k=%d n=%d: stats %+v, want %+v", k, n, stats[r], wantSt)
				}
			}
		}
	}
}

// The neighbouring-dataset check of the distributed release: removing any one example (at the
// first, last and boundary rows of every rank's share) or replacing it by a crafted one moves
// the all-reduced clipped sum by at most C (2C for replacement), up to float32 rounding.
func TestShardedSumSensitivity(t *testing.T) {
	const clip = 1.0
	w := []float32{1, -1, 1e-3, 3, 1}
	for _, k := range []int{2, 3} {
		n := 67
		b := batchOf(n, len(w), 9)
		full, _, _ := shardedSum(t, k, w, b, clip)
		var positions []int
		for r := range k + 1 {
			p := r * n / k
			positions = append(positions, max(p-1, 0), min(p, n-1))
		}
		d := len(w)
		for _, p := range positions {
			// Removal: the batch without row p (the rank boundaries shift, as they would).
			rm := data.Batch{N: n - 1, X: append(append([]float32(nil), b.X[:p*d]...), b.X[(p+1)*d:]...)}
			less, _, _ := shardedSum(t, k, w, rm, clip)
			if dist := l2(full[0], less[0]); dist > clip*(1+1e-5)+1e-5 {
				t.Errorf("k=%d: removing row %d moved the sum by %v > C = %v", k, p, dist, clip)
			}
			// Replacement by a huge example.
			rep := data.Batch{N: n, X: append([]float32(nil), b.X...)}
			for j := range d {
				rep.X[p*d+j] = 1e6 * float32(1-2*(j%2))
			}
			other, _, _ := shardedSum(t, k, w, rep, clip)
			if dist := l2(full[0], other[0]); dist > 2*clip*(1+1e-5)+1e-5 {
				t.Errorf("k=%d: replacing row %d moved the sum by %v > 2C", k, p, dist)
			}
		}
	}
}

func l2(a, b []float32) float64 {
	var s float64
	for i := range a {
		d := float64(a[i]) - float64(b[i])
		s += d * d
	}
	return math.Sqrt(s)
}
