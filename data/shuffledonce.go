package data

import "math/rand/v2"

// ShuffledOnce draws one uniform permutation when it is built and cuts it into ⌊n/b⌋ batches
// of exactly b examples, which it visits cyclically: batch k of every epoch is the same set
// (the shuffled cyclic scheme of Chien & Li, "Convergent Privacy Loss of Noisy-SGD without
// Convexity and Smoothness", Theorem A.1). As footnote 3 there says, the n mod b
// examples left over are dropped: they are never used.
type ShuffledOnce struct {
	perm []int
	b    int
	step int
}

// NewShuffledOnce returns the sampler with batch size b over n examples; rng is used once,
// here, to draw the partition.
func NewShuffledOnce(n, b int, rng *rand.Rand) (*ShuffledOnce, error) {
	if err := checkFixed("shuffled-once", n, b, rng); err != nil {
		return nil, err
	}
	perm := rng.Perm(n)
	return &ShuffledOnce{perm: perm, b: b}, nil
}

// Next returns the next batch of the fixed partition.
func (s *ShuffledOnce) Next(dst []int) ([]int, BatchInfo) {
	k := s.StepsPerEpoch()
	pos := s.step % k
	info := declared(s, BatchInfo{Step: s.step, Epoch: s.step / k, BatchIndex: pos})
	s.step++
	return append(dst[:0], s.perm[pos*s.b:(pos+1)*s.b]...), info
}

// Batch returns batch k of the partition (0 ≤ k < StepsPerEpoch), aliasing internal storage.
func (s *ShuffledOnce) Batch(k int) []int { return s.perm[k*s.b : (k+1)*s.b : (k+1)*s.b] }

func (s *ShuffledOnce) Scheme() Scheme             { return SchemeShuffledOnce }
func (s *ShuffledOnce) SampleRate() float64        { return float64(s.b) / float64(len(s.perm)) }
func (s *ShuffledOnce) ExpectedBatchSize() float64 { return float64(s.b) }
func (s *ShuffledOnce) StepsPerEpoch() int         { return len(s.perm) / s.b }
func (s *ShuffledOnce) DatasetSize() int           { return len(s.perm) }

// BatchSize is b.
func (s *ShuffledOnce) BatchSize() int { return s.b }
