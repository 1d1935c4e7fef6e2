package data

import "math/rand/v2"

// shuffledSampler draws a fresh uniform permutation at the start of every epoch and cuts it into
// ⌊n/b⌋ batches of exactly b examples, visited in order. The last n mod b examples of each
// epoch's permutation are dropped, so that every batch has the same size b (a short batch
// would change the sensitivity-to-batch ratio the accountants assume); since the permutation
// changes every epoch, a dropped example is dropped only for that epoch.
type shuffledSampler struct {
	perm []int
	b    int
	rng  *rand.Rand
	step int
}

// newShuffled returns the sampler with batch size b over n examples.
func newShuffled(n, b int, rng *rand.Rand) (*shuffledSampler, error) {
	if err := checkFixed("shuffled", n, b, rng); err != nil {
		return nil, err
	}
	perm := make([]int, n)
	for i := range perm {
		perm[i] = i
	}
	return &shuffledSampler{perm: perm, b: b, rng: rng}, nil
}

// Next returns the next batch, reshuffling at the start of each epoch.
func (s *shuffledSampler) Next(dst []int) ([]int, BatchInfo) {
	k := s.StepsPerEpoch()
	pos := s.step % k
	info := declared(s, at(s.step, k, pos))
	s.step++
	if pos == 0 {
		s.rng.Shuffle(len(s.perm), func(i, j int) { s.perm[i], s.perm[j] = s.perm[j], s.perm[i] })
	}
	return append(dst[:0], s.perm[pos*s.b:(pos+1)*s.b]...), info
}

func (s *shuffledSampler) Scheme() Scheme             { return SchemeShuffled }
func (s *shuffledSampler) SampleRate() float64        { return float64(s.b) / float64(len(s.perm)) }
func (s *shuffledSampler) ExpectedBatchSize() float64 { return float64(s.b) }
func (s *shuffledSampler) StepsPerEpoch() int         { return len(s.perm) / s.b }
func (s *shuffledSampler) DatasetSize() int           { return len(s.perm) }

// BatchSize is b.
func (s *shuffledSampler) BatchSize() int { return s.b }

func (s *shuffledSampler) drawn() int { return s.step }
