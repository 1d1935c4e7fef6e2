package accounting

import (
	"errors"
	"fmt"
	"math"
)

// Mechanism names the randomiser a step applied to its (clipped, summed) statistic.
type Mechanism string

const (
	// Gaussian adds independent N(0, NoiseStd²) noise to each coordinate of a statistic
	// whose l2 sensitivity is Sensitivity.
	Gaussian Mechanism = "gaussian"
	// SampledWithRejectionGaussian is DP-ULR's Gaussian release on a Poisson batch that is
	// resampled while smaller than MinBatchSize (Feng et al., "Forward Learning with Differential Privacy", Definition 3.4).
	SampledWithRejectionGaussian Mechanism = "sampled-with-rejection-gaussian"
	// NonPrivate marks a step that released its statistic without noise (a non-private
	// baseline). Its NoiseMultiplier is 0, so Validate, and every accountant, refuses it: a
	// run containing such a step has no finite ε.
	NonPrivate Mechanism = "none"
)

// Sampling names how a step chose the examples it touched.
type Sampling string

const (
	// FullBatch: every example, every step (sample rate 1).
	FullBatch Sampling = "full"
	// Poisson: each example independently with probability SampleRate.
	Poisson Sampling = "poisson"
	// WithoutReplacement: a fresh uniformly random subset of exactly BatchSize of the
	// DatasetSize examples, independently each step.
	WithoutReplacement Sampling = "without-replacement"
	// Shuffled: fixed-size batches of a permutation drawn afresh every epoch.
	Shuffled Sampling = "shuffled"
	// ShuffledOnce: one permutation drawn before training, cut into DatasetSize/BatchSize
	// batches that are visited cyclically; BatchIndex says which.
	ShuffledOnce Sampling = "shuffled-once"
	// PoissonWithRejection: Poisson sampling redrawn while the batch has fewer than
	// MinBatchSize examples (DP-ULR).
	PoissonWithRejection Sampling = "poisson-with-rejection"
)

// Neighbouring is the adjacency relation between datasets the guarantee is stated for.
type Neighbouring string

const (
	// AddRemove: neighbouring datasets differ by adding or removing one example.
	AddRemove Neighbouring = "add-remove"
	// ReplaceOne: neighbouring datasets differ by replacing one example.
	ReplaceOne Neighbouring = "replace-one"
)

// Step is what one step of training released, as declared by the optimizer that ran it. A Step
// with Count > 1 stands for Count identical consecutive steps.
//
// The first block of fields is what every accountant needs; the second holds the constants the
// hidden-state and amplification analyses use, zero where a run does not set them.
type Step struct {
	Mechanism    Mechanism
	Sampling     Sampling
	Neighbouring Neighbouring
	// NoiseMultiplier is the noise standard deviation divided by the l2 sensitivity, σ/C.
	NoiseMultiplier float64
	// SampleRate is q: the Poisson rate, or BatchSize/DatasetSize for fixed-size schemes,
	// or 1 for full batch.
	SampleRate float64
	// Count is how many identical steps this record stands for; 0 is read as 1.
	Count int

	// Sensitivity is the l2 sensitivity of the released sum (the clip norm C, or 2C for the
	// replace-one relation where the analysis wants it so; see each accountant).
	Sensitivity float64
	// NoiseStd is the absolute per-coordinate noise standard deviation.
	NoiseStd float64
	// StepSize is the learning rate η of the step.
	StepSize float64
	// BatchSize and DatasetSize are b and n.
	BatchSize, DatasetSize int
	// MinBatchSize is DP-ULR's rejection threshold N_B.
	MinBatchSize int
	// BatchIndex is the index of the batch within a fixed partition (ShuffledOnce), counted
	// from 0.
	BatchIndex int
	// Block is the coordinate block the step updated (DP-MBCD); 0 for whole-model steps.
	Block int
	// Smoothness is the smoothness β of the loss in the block this step updated (DP-MBCD: a
	// lifted layer's γρ_d², Chen & Liu, Lemma B.1) in runs that declare Run.SmoothnessPerRecord;
	// 0 otherwise (the run's Smoothness applies).
	Smoothness float64
	// MixWidth is ModelMix's mixing box width L in the same units as NoiseStd and
	// Sensitivity; LinfParts is the number of parts p of its l2+l∞ clipping (0 or 1: l2 only).
	MixWidth  float64
	LinfParts int
}

// Steps returns the number of steps the record stands for.
func (s Step) Steps() int {
	if s.Count <= 0 {
		return 1
	}
	return s.Count
}

// Validate reports whether the record's common fields are well formed.
func (s Step) Validate() error {
	if s.Mechanism == "" {
		return errors.New("accounting: step has no mechanism: the optimizer must declare what it released")
	}
	if s.Mechanism == NonPrivate {
		return errors.New("accounting: step is non-private (released without noise): no finite ε exists for this run")
	}
	if !(s.NoiseMultiplier > 0) || math.IsInf(s.NoiseMultiplier, 0) {
		return fmt.Errorf("accounting: noise multiplier %v is not a positive finite number: set noise_multiplier > 0", s.NoiseMultiplier)
	}
	if !(s.SampleRate > 0 && s.SampleRate <= 1) {
		return fmt.Errorf("accounting: sample rate %v is outside (0, 1]", s.SampleRate)
	}
	if s.Count < 0 {
		return fmt.Errorf("accounting: step count %d is negative", s.Count)
	}
	if !(s.Smoothness >= 0) || math.IsInf(s.Smoothness, 0) {
		return fmt.Errorf("accounting: step smoothness %v must be a finite number ≥ 0 (0: the run's)", s.Smoothness)
	}
	switch s.Sampling {
	case FullBatch:
		if s.SampleRate != 1 {
			return fmt.Errorf("accounting: full-batch step has sample rate %v, want 1", s.SampleRate)
		}
	case PoissonWithRejection:
		if s.MinBatchSize < 1 {
			return fmt.Errorf("accounting: Poisson sampling with rejection needs its threshold MinBatchSize ≥ 1 (N_B), got %d", s.MinBatchSize)
		}
	case Poisson, Shuffled, ShuffledOnce:
	case WithoutReplacement:
		if s.BatchSize <= 0 || s.DatasetSize < s.BatchSize {
			return fmt.Errorf("accounting: sampling without replacement needs 0 < batch size (%d) <= dataset size (%d)", s.BatchSize, s.DatasetSize)
		}
	default:
		return fmt.Errorf("accounting: unknown sampling scheme %q", s.Sampling)
	}
	return nil
}
