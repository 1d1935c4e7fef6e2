package data

// fullSampler returns every example, 0..n−1, every step (full-batch gradient descent).
type fullSampler struct {
	n    int
	step int
}

// newFull returns the full-batch sampler over n examples.
func newFull(n int) (*fullSampler, error) {
	if n <= 0 {
		return nil, checkFixed("full", n, 1, nil)
	}
	return &fullSampler{n: n}, nil
}

// Next returns 0..n−1.
func (s *fullSampler) Next(dst []int) ([]int, BatchInfo) {
	info := declared(s, at(s.step, 1, 0))
	s.step++
	dst = dst[:0]
	for i := range s.n {
		dst = append(dst, i)
	}
	return dst, info
}

func (s *fullSampler) Scheme() Scheme             { return SchemeFull }
func (s *fullSampler) SampleRate() float64        { return 1 }
func (s *fullSampler) ExpectedBatchSize() float64 { return float64(s.n) }
func (s *fullSampler) StepsPerEpoch() int         { return 1 }
func (s *fullSampler) DatasetSize() int           { return s.n }

func (s *fullSampler) drawn() int { return s.step }
