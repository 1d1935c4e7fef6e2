package data

import "math/rand/v2"

// Shuffled draws a fresh uniform permutation at the start of every epoch and cuts it into
// ⌊n/b⌋ batches of exactly b examples, visited in order. The last n mod b examples of each
// epoch's permutation are dropped, so that every batch has the same size b (a short batch
// would change the sensitivity-to-batch ratio the accountants assume); since the permutation
// changes every epoch, a dropped example is dropped only for that epoch.
type Shuffled struct {
	perm []int
	b    int
	rng  *rand.Rand
	step int
}

// NewShuffled returns the sampler with batch size b over n examples.
func NewShuffled(n, b int, rng *rand.Rand) (*Shuffled, error) {
	if err := checkFixed("shuffled", n, b, rng); err != nil {
		return nil, err
	}
	perm := make([]int, n)
	for i := range perm {
		perm[i] = i
	}
	return &Shuffled{perm: perm, b: b, rng: rng}, nil
}

// Next returns the next batch, reshuffling at the start of each epoch.
func (s *Shuffled) Next(dst []int) ([]int, BatchInfo) {
	k := s.StepsPerEpoch()
	pos := s.step % k
	info := declared(s, BatchInfo{Step: s.step, Epoch: s.step / k, BatchIndex: pos})
	s.step++
	if pos == 0 {
		s.rng.Shuffle(len(s.perm), func(i, j int) { s.perm[i], s.perm[j] = s.perm[j], s.perm[i] })
	}
	return append(dst[:0], s.perm[pos*s.b:(pos+1)*s.b]...), info
}

func (s *Shuffled) Scheme() Scheme             { return SchemeShuffled }
func (s *Shuffled) SampleRate() float64        { return float64(s.b) / float64(len(s.perm)) }
func (s *Shuffled) ExpectedBatchSize() float64 { return float64(s.b) }
func (s *Shuffled) StepsPerEpoch() int         { return len(s.perm) / s.b }
func (s *Shuffled) DatasetSize() int           { return len(s.perm) }

// BatchSize is b.
func (s *Shuffled) BatchSize() int { return s.b }
