package data

import "math/rand/v2"

// withoutReplacementSampler draws, every step independently, a uniformly random subset of exactly b
// of the n examples (the sampling of Ryffel, Bach & Pointcheval's Algorithm 1 and of Chien & Li's
// Theorem 3.12). It keeps a permutation of 0..n−1 and runs b steps of a Fisher–Yates shuffle on
// it per batch: whatever order the permutation is in, its first b entries are then a uniform
// random b-subset, in O(b) time.
type withoutReplacementSampler struct {
	perm []int
	b    int
	rng  *rand.Rand
	step int
}

// newWithoutReplacement returns the sampler with batch size b over n examples.
func newWithoutReplacement(n, b int, rng *rand.Rand) (*withoutReplacementSampler, error) {
	if err := checkFixed("without-replacement", n, b, rng); err != nil {
		return nil, err
	}
	perm := make([]int, n)
	for i := range perm {
		perm[i] = i
	}
	return &withoutReplacementSampler{perm: perm, b: b, rng: rng}, nil
}

// Next returns the next batch.
func (s *withoutReplacementSampler) Next(dst []int) ([]int, BatchInfo) {
	info := declared(s, at(s.step, s.StepsPerEpoch(), 0))
	s.step++
	n := len(s.perm)
	for i := range s.b {
		j := i + s.rng.IntN(n-i)
		s.perm[i], s.perm[j] = s.perm[j], s.perm[i]
	}
	return append(dst[:0], s.perm[:s.b]...), info
}

func (s *withoutReplacementSampler) Scheme() Scheme             { return SchemeWithoutReplacement }
func (s *withoutReplacementSampler) SampleRate() float64        { return float64(s.b) / float64(len(s.perm)) }
func (s *withoutReplacementSampler) ExpectedBatchSize() float64 { return float64(s.b) }
func (s *withoutReplacementSampler) StepsPerEpoch() int {
	return ceilRatio(float64(len(s.perm)) / float64(s.b))
}
func (s *withoutReplacementSampler) DatasetSize() int { return len(s.perm) }

// BatchSize is b.
func (s *withoutReplacementSampler) BatchSize() int { return s.b }

func (s *withoutReplacementSampler) drawn() int { return s.step }
