package data

import (
	"fmt"
	"math"
	"math/rand/v2"
)

// minAcceptance is the smallest probability that a Poisson draw reaches MinBatchSize that
// rejectionSampler accepts: below it, sampling would loop for millions of draws per step.
const minAcceptance = 1e-6

// rejectionSampler is DP-ULR's sampler (Feng et al., "Forward Learning with Differential Privacy", Definition 3.4): a Poisson(q) subsample
// of the n examples, rejected and redrawn while it has fewer than MinBatchSize examples.
type rejectionSampler struct {
	poisson  *poissonSampler
	minBatch int
	accept   float64 // P(Bin(n, q) ≥ minBatch)
	mean     float64 // E[Bin(n, q) | ≥ minBatch]
	step     int
}

// newPoissonWithRejection returns the sampler with rate q and threshold minBatch ≥ 1. It
// refuses thresholds that a Poisson draw reaches with probability below 1e-6.
func newPoissonWithRejection(n int, q float64, minBatch int, rng *rand.Rand) (*rejectionSampler, error) {
	p, err := newPoisson(n, q, rng)
	if err != nil {
		return nil, err
	}
	if minBatch < 1 || minBatch > n {
		return nil, fmt.Errorf("data: rejection threshold (minimum batch size) %d over %d examples: want 1 ≤ N_B ≤ n", minBatch, n)
	}
	below, belowMean := binomialLowerTail(n, q, minBatch)
	accept := 1 - below
	if !(accept >= minAcceptance) {
		return nil, fmt.Errorf("data: rejection threshold %d is reached with probability %.3g by a Poisson batch of mean %.1f; lower the threshold, e.g. to at most q·n/2", minBatch, accept, q*float64(n))
	}
	return &rejectionSampler{poisson: p, minBatch: minBatch, accept: accept,
		mean: (q*float64(n) - belowMean) / accept}, nil
}

// binomialLowerTail returns P(B < m) and E[B·1{B < m}] for B ~ Bin(n, q), summing the
// probability mass function in log space.
func binomialLowerTail(n int, q float64, m int) (p, mean float64) {
	if q == 1 {
		return 0, 0 // B = n ≥ m
	}
	lgn, _ := math.Lgamma(float64(n + 1))
	lq, l1q := math.Log(q), math.Log1p(-q)
	for k := range m {
		lk, _ := math.Lgamma(float64(k + 1))
		lnk, _ := math.Lgamma(float64(n - k + 1))
		pk := math.Exp(lgn - lk - lnk + float64(k)*lq + float64(n-k)*l1q)
		p += pk
		mean += float64(k) * pk
	}
	return min(p, 1), mean
}

// Next returns the next accepted batch; info.Rejected counts the draws discarded before it.
func (s *rejectionSampler) Next(dst []int) ([]int, BatchInfo) {
	info := declared(s, at(s.step, s.StepsPerEpoch(), 0))
	s.step++
	for {
		dst = s.poisson.draw(dst)
		if len(dst) >= s.minBatch {
			return dst, info
		}
		info.rejected++
	}
}

func (s *rejectionSampler) Scheme() Scheme      { return SchemePoissonWithRejection }
func (s *rejectionSampler) SampleRate() float64 { return s.poisson.q }

// ExpectedBatchSize is E[|B| | |B| ≥ MinBatchSize], slightly above qn.
func (s *rejectionSampler) ExpectedBatchSize() float64 { return s.mean }
func (s *rejectionSampler) StepsPerEpoch() int         { return s.poisson.StepsPerEpoch() }
func (s *rejectionSampler) DatasetSize() int           { return s.poisson.n }

// MinBatchSize is the rejection threshold N_B.
func (s *rejectionSampler) MinBatchSize() int { return s.minBatch }

// AcceptanceProbability is P(|B| ≥ N_B) for one Poisson draw; the mean number of rejections
// per batch is 1/AcceptanceProbability − 1.
func (s *rejectionSampler) AcceptanceProbability() float64 { return s.accept }

func (s *rejectionSampler) drawn() int { return s.step }
