package mpi

import (
	"fmt"

	"github.com/dptrain/dptrain/comm"

	"github.com/dptrain/dptrain/data"
)

// GradientOracle is the part of a model a data-parallel step needs (optim.GradientOracle).
type GradientOracle interface {
	Params() []float32
	ClippedGradSum(b data.Batch, clip float64, grad []float32, norms []float64) (data.Stats, error)
	PerSampleGradSum(b data.Batch, f func(i int, g []float32), grad []float32) (data.Stats, error)
}

// Sharded is a data-parallel GradientOracle: every rank holds the same parameters and is
// given the same batch (the ranks draw it from one shared sampler stream); rank r computes the
// clipped per-example gradients of its share only, rows [r·N/K, (r+1)·N/K) of the batch, and
// the shares' sums are added in rank order (AllreduceSum). Each example is clipped on exactly
// one rank, by the rank's own model, so the summed release has the sensitivity of the
// single-process one (C for add/remove), and the batch is the single-process batch, so the
// sampler's declaration and the accounting are unchanged.
//
// The sum differs from a single process's only by float32 rounding (the order of the
// additions); for a given number of ranks it is exactly reproducible.
type Sharded struct {
	Inner GradientOracle
	Comm  comm.Comm
}

// Params returns the inner model's parameters.
func (s *Sharded) Params() []float32 { return s.Inner.Params() }

// share returns this rank's rows of b and the position of its first row.
func (s *Sharded) share(b data.Batch) (data.Batch, int, error) {
	k, r := s.Comm.Size(), s.Comm.Rank()
	lo, hi := r*b.N/k, (r+1)*b.N/k
	if b.N == 0 {
		return b, 0, nil
	}
	if len(b.X)%b.N != 0 {
		return b, 0, fmt.Errorf("mpi: a batch of %d rows holds %d values", b.N, len(b.X))
	}
	d := len(b.X) / b.N
	sub := data.Batch{X: b.X[lo*d : hi*d], N: hi - lo}
	if b.Y != nil {
		sub.Y = b.Y[lo:hi]
	}
	if b.Index != nil {
		sub.Index = b.Index[lo:hi]
	}
	return sub, lo, nil
}

// ClippedGradSum writes the clipped gradient sum over the whole batch into grad on every rank,
// and every example's norm into norms.
func (s *Sharded) ClippedGradSum(b data.Batch, clip float64, grad []float32, norms []float64) (data.Stats, error) {
	sub, lo, err := s.share(b)
	if err != nil {
		return data.Stats{}, err
	}
	var mine []float64
	if norms != nil {
		mine = make([]float64, sub.N)
	}
	var st data.Stats
	if sub.N == 0 {
		clear(grad) // a share of no rows (a batch smaller than the group)
	} else if st, err = s.Inner.ClippedGradSum(sub, clip, grad, mine); err != nil {
		return st, err
	}
	if norms != nil {
		// Zero outside this rank's rows, so the rank-ordered sum is exact.
		clear(norms[:b.N])
		copy(norms[lo:], mine)
		if err := AllreduceSum(s.Comm, norms[:b.N]); err != nil {
			return st, err
		}
	}
	return s.reduce(st, grad)
}

// PerSampleGradSum calls f for this rank's examples (with their positions in the whole
// batch) and writes the sum of the transformed gradients over the whole batch into grad on
// every rank.
func (s *Sharded) PerSampleGradSum(b data.Batch, f func(i int, g []float32), grad []float32) (data.Stats, error) {
	sub, lo, err := s.share(b)
	if err != nil {
		return data.Stats{}, err
	}
	var st data.Stats
	if sub.N == 0 {
		clear(grad)
	} else if st, err = s.Inner.PerSampleGradSum(sub, func(i int, g []float32) { f(lo+i, g) }, grad); err != nil {
		return st, err
	}
	return s.reduce(st, grad)
}

// reduce sums grad and the statistics over the ranks.
func (s *Sharded) reduce(st data.Stats, grad []float32) (data.Stats, error) {
	if err := AllreduceSum(s.Comm, grad); err != nil {
		return st, err
	}
	v := []float64{st.Loss, float64(st.Correct), float64(st.N), float64(st.Clipped), float64(st.NonFinite)}
	if err := AllreduceSum(s.Comm, v); err != nil {
		return st, err
	}
	return data.Stats{Loss: v[0], Correct: int(v[1]), N: int(v[2]), Clipped: int(v[3]), NonFinite: int(v[4])}, nil
}
