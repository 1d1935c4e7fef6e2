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
// threshold), which accountants interpret. The declaration is set only by this package's
// samplers (Next and PlannedBatch): a private step takes it from the batch, so that a program
// cannot pair one sampler with another scheme's declaration. A BatchInfo built any other way
// declares nothing, and private steps refuse it.
type BatchInfo struct {
	// Step counts the batches drawn before this one, from 0.
	Step int
	// Epoch is the epoch the batch belongs to, from 0: Step / StepsPerEpoch.
	Epoch int
	// BatchIndex is the batch's position in its epoch's partition for Shuffled and
	// ShuffledOnce (for ShuffledOnce the partition is the same every epoch), from 0; it is 0
	// for the other schemes, which have no partition.
	BatchIndex int
	// Rejected is how many Poisson draws PoissonWithRejection discarded (as smaller than its
	// MinBatchSize) before this batch; 0 for the other schemes.
	Rejected int

	scheme           Scheme
	rate             float64
	size, n, minSize int
}

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
func declared(s Sampler, info BatchInfo) BatchInfo {
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

// PlannedBatch returns the public description of the batch sampler s will draw at step k
// (from 0), without drawing anything: its step, epoch and, for the partition schemes
// (Shuffled, ShuffledOnce), its index in the partition, and the sampler's declaration.
// Rejected is left 0: it is random.
// Calibration uses it to declare every planned step before training.
func PlannedBatch(s Sampler, k int) BatchInfo {
	e := s.StepsPerEpoch()
	info := BatchInfo{Step: k, Epoch: k / e}
	if sc := s.Scheme(); sc == SchemeShuffled || sc == SchemeShuffledOnce {
		info.BatchIndex = k % e
	}
	return declared(s, info)
}

// Sampler picks the indices of each step's batch from a dataset of DatasetSize examples. It
// declares its scheme and rate so that accountants can check them; its randomness comes only
// from the *rand.Rand it was built with.
type Sampler interface {
	// Next returns the indices of the next batch, appended to dst[:0] (so that a dst of
	// sufficient capacity is reused without allocating), and what the batch was.
	Next(dst []int) (batch []int, info BatchInfo)
	// Scheme names the sampling scheme.
	Scheme() Scheme
	// SampleRate is q: the Poisson rate, or b/n for fixed-size schemes, or 1 for full batch.
	SampleRate() float64
	// ExpectedBatchSize is the mean batch size: qn for Poisson, b for fixed-size schemes. For
	// PoissonWithRejection it is the mean of the accepted (truncated) batches.
	ExpectedBatchSize() float64
	// StepsPerEpoch is the number of steps counted as one epoch: ⌊n/b⌋ for the partition
	// schemes (the last partial batch is dropped), ⌈n/b⌉ for WithoutReplacement, ⌈1/q⌉ for
	// the Poisson schemes and 1 for Full.
	StepsPerEpoch() int
	// DatasetSize is n.
	DatasetSize() int
	// MarshalBinary and UnmarshalBinary save and restore the sampler's position (and its
	// permutation, for the schemes that keep one) for resuming a run; UnmarshalBinary refuses
	// a state written by a sampler of another scheme or size. The random generator is not
	// included.
	encoding.BinaryMarshaler
	encoding.BinaryUnmarshaler
}

// NewSampler builds the sampler of the given scheme over n examples with batch size b (the
// expected size for the Poisson schemes, whose rate is q = b/n; ignored by Full). minBatch is
// PoissonWithRejection's threshold and is ignored by the other schemes.
func NewSampler(scheme Scheme, n, b, minBatch int, rng *rand.Rand) (Sampler, error) {
	if n <= 0 {
		return nil, fmt.Errorf("data: sampler over %d examples: the dataset is empty", n)
	}
	switch scheme {
	case SchemeFull:
		return NewFull(n)
	case SchemePoisson:
		if b <= 0 || b > n {
			return nil, fmt.Errorf("data: Poisson sampler with expected batch size %d over %d examples: want 1 ≤ b ≤ n", b, n)
		}
		return NewPoisson(n, float64(b)/float64(n), rng)
	case SchemePoissonWithRejection:
		if b <= 0 || b > n {
			return nil, fmt.Errorf("data: Poisson sampler with expected batch size %d over %d examples: want 1 ≤ b ≤ n", b, n)
		}
		return NewPoissonWithRejection(n, float64(b)/float64(n), minBatch, rng)
	case SchemeWithoutReplacement:
		return NewWithoutReplacement(n, b, rng)
	case SchemeShuffled:
		return NewShuffled(n, b, rng)
	case SchemeShuffledOnce:
		return NewShuffledOnce(n, b, rng)
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
