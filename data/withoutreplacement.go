package data

import "math/rand/v2"

// WithoutReplacement draws, every step independently, a uniformly random subset of exactly b
// of the n examples (the sampling of Ryffel, Bach & Pointcheval's Algorithm 1 and of Chien & Li's
// Theorem 3.12). It keeps a permutation of 0..n−1 and runs b steps of a Fisher–Yates shuffle on
// it per batch: whatever order the permutation is in, its first b entries are then a uniform
// random b-subset, in O(b) time.
type WithoutReplacement struct {
	perm []int
	b    int
	rng  *rand.Rand
	step int
}

// NewWithoutReplacement returns the sampler with batch size b over n examples.
func NewWithoutReplacement(n, b int, rng *rand.Rand) (*WithoutReplacement, error) {
	if err := checkFixed("without-replacement", n, b, rng); err != nil {
		return nil, err
	}
	perm := make([]int, n)
	for i := range perm {
		perm[i] = i
	}
	return &WithoutReplacement{perm: perm, b: b, rng: rng}, nil
}

// Next returns the next batch.
func (s *WithoutReplacement) Next(dst []int) ([]int, BatchInfo) {
	info := declared(s, BatchInfo{Step: s.step, Epoch: s.step / s.StepsPerEpoch()})
	s.step++
	n := len(s.perm)
	for i := range s.b {
		j := i + s.rng.IntN(n-i)
		s.perm[i], s.perm[j] = s.perm[j], s.perm[i]
	}
	return append(dst[:0], s.perm[:s.b]...), info
}

func (s *WithoutReplacement) Scheme() Scheme             { return SchemeWithoutReplacement }
func (s *WithoutReplacement) SampleRate() float64        { return float64(s.b) / float64(len(s.perm)) }
func (s *WithoutReplacement) ExpectedBatchSize() float64 { return float64(s.b) }
func (s *WithoutReplacement) StepsPerEpoch() int {
	return ceilRatio(float64(len(s.perm)) / float64(s.b))
}
func (s *WithoutReplacement) DatasetSize() int { return len(s.perm) }

// BatchSize is b.
func (s *WithoutReplacement) BatchSize() int { return s.b }
