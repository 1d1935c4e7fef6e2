package data

import (
	"encoding/binary"
	"fmt"
	"math"
)

// samplerStateVersion prefixes every encoded sampler state.
const samplerStateVersion = 1

// samplerState is what a sampler needs to continue where it stopped, as its MarshalBinary
// encodes it: the scheme and sizes it was built with (checked on restore), the steps drawn,
// and its permutation (ShuffledOnce's fixed partition; Shuffled's current epoch;
// WithoutReplacement's working order), nil for the schemes that keep none. Its random
// generator is not part of it: a seeded run stores that stream separately, a secure run draws
// afresh.
//
// The permutation of ShuffledOnce is the run's batch partition: like the rest of a checkpoint
// it is for the operator and must not be published.
type samplerState struct {
	scheme Scheme
	n, b   int
	q      float64
	step   int
	perm   []int
}

func (s samplerState) marshal() []byte {
	buf := []byte{samplerStateVersion}
	buf = binary.AppendUvarint(buf, uint64(len(s.scheme)))
	buf = append(buf, s.scheme...)
	for _, v := range []uint64{uint64(s.n), uint64(s.b), math.Float64bits(s.q), uint64(s.step), uint64(len(s.perm))} {
		buf = binary.AppendUvarint(buf, v)
	}
	for _, p := range s.perm {
		buf = binary.AppendUvarint(buf, uint64(p))
	}
	return buf
}

// restore decodes b and checks it against the sampler it is restored into (want: scheme,
// sizes, and whether a permutation is expected), returning the step and permutation.
func (want samplerState) restore(b []byte) (samplerState, error) {
	bad := func(format string, args ...any) (samplerState, error) {
		return samplerState{}, fmt.Errorf("data: sampler state: "+format, args...)
	}
	if len(b) == 0 || b[0] != samplerStateVersion {
		return bad("unknown format (want version %d): the checkpoint was written by another dptrain", samplerStateVersion)
	}
	b = b[1:]
	next := func() (uint64, bool) {
		v, k := binary.Uvarint(b)
		if k <= 0 {
			return 0, false
		}
		b = b[k:]
		return v, true
	}
	l, ok := next()
	if !ok || l > uint64(len(b)) {
		return bad("truncated")
	}
	got := samplerState{scheme: Scheme(b[:l])}
	b = b[l:]
	var f [5]uint64
	for i := range f {
		if f[i], ok = next(); !ok {
			return bad("truncated")
		}
	}
	got.n, got.b, got.q, got.step = int(f[0]), int(f[1]), math.Float64frombits(f[2]), int(f[3])
	if got.scheme != want.scheme || got.n != want.n || got.b != want.b || got.q != want.q {
		return bad("it is a %s sampler over %d examples (b = %d, q = %v), this run's is %s over %d (b = %d, q = %v): resume with the same data and optimizer settings",
			got.scheme, got.n, got.b, got.q, want.scheme, want.n, want.b, want.q)
	}
	if got.step < 0 || f[3] > math.MaxInt32 {
		return bad("step %d out of range", f[3])
	}
	if (f[4] != 0) != (want.perm != nil) || (f[4] != 0 && f[4] != uint64(want.n)) {
		return bad("holds a permutation of %d entries, want %d", f[4], len(want.perm))
	}
	if f[4] > 0 {
		got.perm = make([]int, f[4])
		seen := make([]bool, want.n)
		for i := range got.perm {
			v, ok := next()
			if !ok {
				return bad("truncated permutation")
			}
			if v >= uint64(want.n) || seen[v] {
				return bad("the stored order is not a permutation of 0..%d", want.n-1)
			}
			seen[v] = true
			got.perm[i] = int(v)
		}
	}
	if len(b) != 0 {
		return bad("%d trailing bytes", len(b))
	}
	return got, nil
}

// MarshalBinary encodes the sampler's state (see samplerState).
func (p *poissonSampler) MarshalBinary() ([]byte, error) { return p.state().marshal(), nil }

// UnmarshalBinary restores a state written by MarshalBinary for the same n and q.
func (p *poissonSampler) UnmarshalBinary(b []byte) error { return restoreStep(p.state(), &p.step, b) }

func (p *poissonSampler) state() samplerState {
	return samplerState{scheme: SchemePoisson, n: p.n, q: p.q, step: p.step}
}

// MarshalBinary encodes the sampler's state (see samplerState).
func (s *rejectionSampler) MarshalBinary() ([]byte, error) { return s.state().marshal(), nil }

// UnmarshalBinary restores a state written by MarshalBinary for the same n, q and threshold.
func (s *rejectionSampler) UnmarshalBinary(b []byte) error {
	return restoreStep(s.state(), &s.step, b)
}

func (s *rejectionSampler) state() samplerState {
	return samplerState{scheme: SchemePoissonWithRejection, n: s.poisson.n, b: s.minBatch, q: s.poisson.q, step: s.step}
}

// MarshalBinary encodes the sampler's state (see samplerState).
func (s *fullSampler) MarshalBinary() ([]byte, error) { return s.state().marshal(), nil }

// UnmarshalBinary restores a state written by MarshalBinary for the same n.
func (s *fullSampler) UnmarshalBinary(b []byte) error { return restoreStep(s.state(), &s.step, b) }

func (s *fullSampler) state() samplerState {
	return samplerState{scheme: SchemeFull, n: s.n, step: s.step}
}

// permState is the state of the samplers that keep a permutation.
func permState(scheme Scheme, perm []int, b, step int) samplerState {
	return samplerState{scheme: scheme, n: len(perm), b: b, step: step, perm: perm}
}

// restoreStep restores a sampler's step (and permutation, if want has one) from b, checked
// against want, the sampler's current state.
func restoreStep(want samplerState, step *int, b []byte) error {
	st, err := want.restore(b)
	if err != nil {
		return err
	}
	*step = st.step
	copy(want.perm, st.perm)
	return nil
}

// restorePerm restores a permutation sampler's step and order from b.
func restorePerm(scheme Scheme, perm []int, bs int, step *int, b []byte) error {
	return restoreStep(permState(scheme, perm, bs, *step), step, b)
}

// MarshalBinary encodes the sampler's state, its fixed partition included (see samplerState).
func (s *shuffledOnceSampler) MarshalBinary() ([]byte, error) {
	return permState(SchemeShuffledOnce, s.perm, s.b, s.step).marshal(), nil
}

// UnmarshalBinary restores the partition and position written by MarshalBinary: the run
// continues the same cyclic order.
func (s *shuffledOnceSampler) UnmarshalBinary(b []byte) error {
	return restorePerm(SchemeShuffledOnce, s.perm, s.b, &s.step, b)
}

// MarshalBinary encodes the sampler's state, the current epoch's permutation included.
func (s *shuffledSampler) MarshalBinary() ([]byte, error) {
	return permState(SchemeShuffled, s.perm, s.b, s.step).marshal(), nil
}

// UnmarshalBinary restores the epoch's permutation and position written by MarshalBinary.
func (s *shuffledSampler) UnmarshalBinary(b []byte) error {
	return restorePerm(SchemeShuffled, s.perm, s.b, &s.step, b)
}

// MarshalBinary encodes the sampler's state, its working order included.
func (s *withoutReplacementSampler) MarshalBinary() ([]byte, error) {
	return permState(SchemeWithoutReplacement, s.perm, s.b, s.step).marshal(), nil
}

// UnmarshalBinary restores the working order and step written by MarshalBinary.
func (s *withoutReplacementSampler) UnmarshalBinary(b []byte) error {
	return restorePerm(SchemeWithoutReplacement, s.perm, s.b, &s.step, b)
}
