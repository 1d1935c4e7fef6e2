package data

import (
	"encoding"
	"fmt"
	"math"
	"math/rand/v2"
)

// Scheme names how a sampler picks each step's batch. Its values equal the
// accounting.Sampling constants (data does not import accounting), so a trainer converts with
// accounting.Sampling(s.Scheme()).
type Scheme string

const (
	// SchemeFull: every example, every step.
	SchemeFull Scheme = "full"
	// SchemePoisson: each example independently with probability SampleRate.
	SchemePoisson Scheme = "poisson"
	// SchemeWithoutReplacement: a fresh uniform subset of exactly b examples each step.
	SchemeWithoutReplacement Scheme = "without-replacement"
	// SchemeShuffled: fixed-size batches of a permutation drawn afresh every epoch.
	SchemeShuffled Scheme = "shuffled"
	// SchemeShuffledOnce: one permutation drawn once, cut into ⌊n/b⌋ batches visited cyclically.
	SchemeShuffledOnce Scheme = "shuffled-once"
	// SchemePoissonWithRejection: Poisson sampling redrawn while the batch has fewer than
	// MinBatchSize examples (Feng et al., "Forward Learning with Differential Privacy", Definition 3.4).
	SchemePoissonWithRejection Scheme = "poisson-with-rejection"
)

// BatchInfo describes one batch a sampler drew: where it falls in the run, and the sampler's
// declaration of how it was drawn (scheme, rate, fixed batch size, dataset size, rejection
// threshold), which accountants interpret. Every field is unexported and set only by this
// package's Sampler (Next and Planned): a program can read a BatchInfo, never write one, so it
// cannot pair a batch with another scheme's declaration. The zero BatchInfo declares nothing,
// and private steps refuse it.
type BatchInfo struct {
	step, epoch, index, rejected int

	scheme           Scheme
	rate             float64
	size, n, minSize int
}

// Step counts the batches drawn before this one, from 0.
func (b BatchInfo) Step() int { return b.step }

// Epoch is the epoch the batch belongs to, from 0: Step / StepsPerEpoch.
func (b BatchInfo) Epoch() int { return b.epoch }

// BatchIndex is the batch's position in its epoch's partition for Shuffled and ShuffledOnce
// (for ShuffledOnce the partition is the same every epoch), from 0; it is 0 for the other
// schemes, which have no partition.
func (b BatchInfo) BatchIndex() int { return b.index }

// Rejected is how many Poisson draws PoissonWithRejection discarded (as smaller than its
// MinBatchSize) before this batch; 0 for the other schemes, and for a planned batch.
func (b BatchInfo) Rejected() int { return b.rejected }

// Scheme is the sampling scheme that drew the batch ("" if no sampler of this package did).
func (b BatchInfo) Scheme() Scheme { return b.scheme }

// SampleRate is q: the Poisson rate, b/n for fixed-size schemes, 1 for full batch.
func (b BatchInfo) SampleRate() float64 { return b.rate }

// BatchSize is the fixed batch size of fixed-size schemes (n for full batch); 0 for the
// Poisson schemes, whose batch size is random and never declared.
func (b BatchInfo) BatchSize() int { return b.size }

// DatasetSize is n.
func (b BatchInfo) DatasetSize() int { return b.n }

// MinBatchSize is PoissonWithRejection's threshold N_B; 0 for the other schemes.
func (b BatchInfo) MinBatchSize() int { return b.minSize }

// declared returns info with s's declaration.
func declared(s drawer, info BatchInfo) BatchInfo {
	info.scheme, info.rate, info.n = s.Scheme(), s.SampleRate(), s.DatasetSize()
	switch info.scheme {
	case SchemePoisson:
	case SchemePoissonWithRejection:
		if r, ok := s.(interface{ MinBatchSize() int }); ok {
			info.minSize = r.MinBatchSize()
		}
	case SchemeFull:
		info.size = info.n
	default:
		if f, ok := s.(interface{ BatchSize() int }); ok {
			info.size = f.BatchSize()
		}
	}
	return info
}

// at returns the position part of a BatchInfo for step k of a sampler with e steps per epoch;
// index is the batch's place in its epoch's partition (0 for the schemes without one).
func at(k, e, index int) BatchInfo { return BatchInfo{step: k, epoch: k / e, index: index} }

// drawer is one sampling scheme's implementation; Sampler is the only type that exposes one.
type drawer interface {
	Next(dst []int) (batch []int, info BatchInfo)
	Scheme() Scheme
	SampleRate() float64
	ExpectedBatchSize() float64
	StepsPerEpoch() int
	DatasetSize() int
	// drawn is the number of batches drawn (the position a checkpoint restores).
	drawn() int
	encoding.BinaryMarshaler
	encoding.BinaryUnmarshaler
}

// Sampler picks the indices of each step's batch from a dataset of DatasetSize examples, by
// one of the schemes (Scheme), and declares with every batch how it drew it. It is a concrete
// type, built only by NewSampler: no other type can stand in for it, so a batch's declaration
// always comes from the code that drew the batch. Its randomness comes only from the
// *rand.Rand it was built with.
//
// A Sampler is not safe for concurrent use.
type Sampler struct {
	d drawer
}

// Next returns the indices of the next batch, appended to dst[:0] (so that a dst of sufficient
// capacity is reused without allocating), and what the batch was.
func (s *Sampler) Next(dst []int) (batch []int, info BatchInfo) { return s.d.Next(dst) }

// Scheme names the sampling scheme.
func (s *Sampler) Scheme() Scheme { return s.d.Scheme() }

// SampleRate is q: the Poisson rate, or b/n for fixed-size schemes, or 1 for full batch.
func (s *Sampler) SampleRate() float64 { return s.d.SampleRate() }

// ExpectedBatchSize is the mean batch size: qn for Poisson, b for fixed-size schemes. For
// PoissonWithRejection it is the mean of the accepted (truncated) batches.
func (s *Sampler) ExpectedBatchSize() float64 { return s.d.ExpectedBatchSize() }

// StepsPerEpoch is the number of steps counted as one epoch: ⌊n/b⌋ for the partition schemes
// (the last partial batch is dropped), ⌈n/b⌉ for WithoutReplacement, ⌈1/q⌉ for the Poisson
// schemes and 1 for Full.
func (s *Sampler) StepsPerEpoch() int { return s.d.StepsPerEpoch() }

// DatasetSize is n.
func (s *Sampler) DatasetSize() int { return s.d.DatasetSize() }

// Drawn is the number of batches drawn so far (restored by UnmarshalBinary): the step the
// next batch declares.
func (s *Sampler) Drawn() int { return s.d.drawn() }

// BatchSize is the fixed batch size of the fixed-size schemes (n for Full); 0 for the Poisson
// schemes.
func (s *Sampler) BatchSize() int { return declared(s.d, BatchInfo{}).size }

// MinBatchSize is PoissonWithRejection's threshold N_B; 0 for the other schemes.
func (s *Sampler) MinBatchSize() int { return declared(s.d, BatchInfo{}).minSize }

// AcceptanceProbability is, for PoissonWithRejection, P(|B| ≥ N_B) for one Poisson draw (the
// mean number of rejections per batch is 1/AcceptanceProbability − 1); 1 for the other schemes.
func (s *Sampler) AcceptanceProbability() float64 {
	if r, ok := s.d.(*rejectionSampler); ok {
		return r.accept
	}
	return 1
}

// MarshalBinary saves the sampler's position (and its permutation, for the schemes that keep
// one) for resuming a run. The random generator is not included.
func (s *Sampler) MarshalBinary() ([]byte, error) { return s.d.MarshalBinary() }

// UnmarshalBinary restores a position saved by MarshalBinary; it refuses a state written by a
// sampler of another scheme or size.
func (s *Sampler) UnmarshalBinary(b []byte) error { return s.d.UnmarshalBinary(b) }

// Planned returns the public description of the batch the sampler will draw at step k (from
// 0), without drawing anything: its step, epoch and, for the partition schemes (Shuffled,
// ShuffledOnce), its index in the partition, and the sampler's declaration. Rejected is 0: it
// is random. Calibration and the accountants' checks use it to declare the planned steps
// before training.
func (s *Sampler) Planned(k int) BatchInfo {
	e := s.d.StepsPerEpoch()
	index := 0
	if sc := s.d.Scheme(); sc == SchemeShuffled || sc == SchemeShuffledOnce {
		index = k % e
	}
	return declared(s.d, at(k, e, index))
}

// PlannedBatch is s.Planned(k).
func PlannedBatch(s *Sampler, k int) BatchInfo { return s.Planned(k) }

// NewSampler builds the sampler of the given scheme over n examples with batch size b (the
// expected size for the Poisson schemes, whose rate is q = b/n; ignored by Full). minBatch is
// PoissonWithRejection's threshold and is ignored by the other schemes.
func NewSampler(scheme Scheme, n, b, minBatch int, rng *rand.Rand) (*Sampler, error) {
	d, err := newDrawer(scheme, n, b, minBatch, rng)
	if err != nil {
		return nil, err
	}
	return &Sampler{d: d}, nil
}

func newDrawer(scheme Scheme, n, b, minBatch int, rng *rand.Rand) (drawer, error) {
	if n <= 0 {
		return nil, fmt.Errorf("data: sampler over %d examples: the dataset is empty", n)
	}
	switch scheme {
	case SchemeFull:
		return newFull(n)
	case SchemePoisson:
		if b <= 0 || b > n {
			return nil, fmt.Errorf("data: Poisson sampler with expected batch size %d over %d examples: want 1 ≤ b ≤ n", b, n)
		}
		return newPoisson(n, float64(b)/float64(n), rng)
	case SchemePoissonWithRejection:
		if b <= 0 || b > n {
			return nil, fmt.Errorf("data: Poisson sampler with expected batch size %d over %d examples: want 1 ≤ b ≤ n", b, n)
		}
		return newPoissonWithRejection(n, float64(b)/float64(n), minBatch, rng)
	case SchemeWithoutReplacement:
		return newWithoutReplacement(n, b, rng)
	case SchemeShuffled:
		return newShuffled(n, b, rng)
	case SchemeShuffledOnce:
		return newShuffledOnce(n, b, rng)
	}
	return nil, fmt.Errorf("data: unknown sampling scheme %q: want full, poisson, poisson-with-rejection, without-replacement, shuffled or shuffled-once", scheme)
}

func checkFixed(kind string, n, b int, rng *rand.Rand) error {
	if n <= 0 {
		return fmt.Errorf("data: %s sampler over %d examples: the dataset is empty", kind, n)
	}
	if b <= 0 || b > n {
		return fmt.Errorf("data: %s sampler with batch size %d over %d examples: want 1 ≤ b ≤ n", kind, b, n)
	}
	if rng == nil {
		return fmt.Errorf("data: %s sampler needs a random source (*rand.Rand); pass one seeded securely or from the config seed", kind)
	}
	return nil
}

// ceilRatio returns ⌈x⌉ for x computed in floating point, forgiving a relative error of 1e-9
// so that 1/(b/n) = n/b for divisible n and b.
func ceilRatio(x float64) int {
	return max(1, int(math.Ceil(x*(1-1e-9))))
}
