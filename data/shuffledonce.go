package data

import "math/rand/v2"

// shuffledOnceSampler draws one uniform permutation when it is built and cuts it into ⌊n/b⌋ batches
// of exactly b examples, which it visits cyclically: batch k of every epoch is the same set
// (the shuffled cyclic scheme of Chien & Li, "Convergent Privacy Loss of Noisy-SGD without
// Convexity and Smoothness", Theorem A.1). As footnote 3 there says, the n mod b
// examples left over are dropped: they are never used.
type shuffledOnceSampler struct {
	perm []int
	b    int
	step int
}

// newShuffledOnce returns the sampler with batch size b over n examples; rng is used once,
// here, to draw the partition.
func newShuffledOnce(n, b int, rng *rand.Rand) (*shuffledOnceSampler, error) {
	if err := checkFixed("shuffled-once", n, b, rng); err != nil {
		return nil, err
	}
	perm := rng.Perm(n)
	return &shuffledOnceSampler{perm: perm, b: b}, nil
}

// Next returns the next batch of the fixed partition.
func (s *shuffledOnceSampler) Next(dst []int) ([]int, BatchInfo) {
	k := s.StepsPerEpoch()
	pos := s.step % k
	info := declared(s, at(s.step, k, pos))
	s.step++
	return append(dst[:0], s.perm[pos*s.b:(pos+1)*s.b]...), info
}

// Batch returns batch k of the partition (0 ≤ k < StepsPerEpoch), aliasing internal storage.
func (s *shuffledOnceSampler) Batch(k int) []int { return s.perm[k*s.b : (k+1)*s.b : (k+1)*s.b] }

func (s *shuffledOnceSampler) Scheme() Scheme             { return SchemeShuffledOnce }
func (s *shuffledOnceSampler) SampleRate() float64        { return float64(s.b) / float64(len(s.perm)) }
func (s *shuffledOnceSampler) ExpectedBatchSize() float64 { return float64(s.b) }
func (s *shuffledOnceSampler) StepsPerEpoch() int         { return len(s.perm) / s.b }
func (s *shuffledOnceSampler) DatasetSize() int           { return len(s.perm) }

// BatchSize is b.
func (s *shuffledOnceSampler) BatchSize() int { return s.b }

func (s *shuffledOnceSampler) drawn() int { return s.step }
