package data

// Full returns every example, 0..n−1, every step (full-batch gradient descent).
type Full struct {
	n    int
	step int
}

// NewFull returns the full-batch sampler over n examples.
func NewFull(n int) (*Full, error) {
	if n <= 0 {
		return nil, checkFixed("full", n, 1, nil)
	}
	return &Full{n: n}, nil
}

// Next returns 0..n−1.
func (s *Full) Next(dst []int) ([]int, BatchInfo) {
	info := declared(s, BatchInfo{Step: s.step, Epoch: s.step})
	s.step++
	dst = dst[:0]
	for i := range s.n {
		dst = append(dst, i)
	}
	return dst, info
}

func (s *Full) Scheme() Scheme             { return SchemeFull }
func (s *Full) SampleRate() float64        { return 1 }
func (s *Full) ExpectedBatchSize() float64 { return float64(s.n) }
func (s *Full) StepsPerEpoch() int         { return 1 }
func (s *Full) DatasetSize() int           { return s.n }
