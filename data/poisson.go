package data

import (
	"fmt"
	"math"
	"math/rand/v2"
)

// poissonSampler samples each of n examples independently with probability q (Poisson subsampling,
// the scheme of the sampled Gaussian mechanism; Mironov, Talwar, Zhang 2019). It draws the
// gaps between selected indices from the geometric distribution, P(gap = k) = (1−q)^k q, as
// ⌊ln U / ln(1−q)⌋ with U uniform on (0, 1]: O(qn) work per batch instead of n Bernoulli draws.
type poissonSampler struct {
	n      int
	q      float64
	log1mq float64 // ln(1−q)
	rng    *rand.Rand
	step   int
}

// newPoisson returns a Poisson sampler over n examples with rate q ∈ (0, 1].
func newPoisson(n int, q float64, rng *rand.Rand) (*poissonSampler, error) {
	if n <= 0 {
		return nil, fmt.Errorf("data: Poisson sampler over %d examples: the dataset is empty", n)
	}
	if !(q > 0 && q <= 1) {
		return nil, fmt.Errorf("data: Poisson sample rate %v is outside (0, 1]", q)
	}
	if rng == nil {
		return nil, fmt.Errorf("data: Poisson sampler needs a random source (*rand.Rand); pass one seeded securely or from the config seed")
	}
	return &poissonSampler{n: n, q: q, log1mq: math.Log1p(-q), rng: rng}, nil
}

// draw appends one Poisson subsample to dst[:0], in increasing order.
func (p *poissonSampler) draw(dst []int) []int {
	dst = dst[:0]
	if p.q == 1 {
		for i := range p.n {
			dst = append(dst, i)
		}
		return dst
	}
	for i := -1; ; {
		u := 1 - p.rng.Float64() // (0, 1]
		gap := math.Floor(math.Log(u) / p.log1mq)
		if gap >= float64(p.n-1-i) {
			return dst
		}
		i += 1 + int(gap)
		dst = append(dst, i)
	}
}

// Next returns the next batch.
func (p *poissonSampler) Next(dst []int) ([]int, BatchInfo) {
	info := declared(p, at(p.step, p.StepsPerEpoch(), 0))
	p.step++
	return p.draw(dst), info
}

func (p *poissonSampler) Scheme() Scheme             { return SchemePoisson }
func (p *poissonSampler) SampleRate() float64        { return p.q }
func (p *poissonSampler) ExpectedBatchSize() float64 { return p.q * float64(p.n) }
func (p *poissonSampler) StepsPerEpoch() int         { return ceilRatio(1 / p.q) }
func (p *poissonSampler) DatasetSize() int           { return p.n }

func (s *poissonSampler) drawn() int { return s.step }
