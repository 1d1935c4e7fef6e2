package compare

import (
	"context"
	"errors"
	"fmt"
	"math"

	"github.com/dptrain/dptrain/accounting"
)

// CompositionModes are the accountants of standard composition, what "all" stands for in
// Accountants.
var CompositionModes = []string{"rdp", "pld", "gdp"}

// Accountants returns the modes a name stands for: CompositionModes for "all", else the name.
func Accountants(name string) []string {
	if name == "all" {
		return CompositionModes
	}
	return []string{name}
}

// Repeated describes a released mechanism as the same step repeated: what "dptrain account"
// and "dptrain account calibrate" are told. Its errors name each parameter by the flag of
// those commands that sets it (--sample-rate for SampleRate, and so on).
type Repeated struct {
	// SampleRate is q in (0, 1]: the Poisson rate, or batch size over dataset size.
	SampleRate float64
	// Delta is the δ of the (ε, δ) guarantee, in (0, 1).
	Delta float64
	// Epochs, when positive, stands for ceil(Epochs/q) steps; Steps must then be negative.
	Epochs float64
	// Steps is the number of steps (negative: not given).
	Steps int
	// DatasetSize n, BatchSize b (without replacement; 0 means q·n) and MinBatchSize N_B
	// (poisson-with-rejection only).
	DatasetSize, BatchSize, MinBatchSize int
	// Sampling is poisson, without-replacement, full or poisson-with-rejection.
	Sampling string
	// Mechanism is gaussian or sampled-with-rejection-gaussian.
	Mechanism string
	// MixWidth and LinfParts are ModelMix's mixing width over the clip norm and the p of its
	// l2+l∞ clipping.
	MixWidth  float64
	LinfParts int
}

// Step builds the record of the described steps with noise multiplier sigma, after checking
// the description: the sample rate and δ in range, one of steps and epochs, a known sampling
// and mechanism, and, without replacement, a sample rate that is the batch size over the
// dataset size (the analysis uses q = b/n, so a disagreeing rate would misstate ε).
func (r Repeated) Step(sigma float64) (accounting.Step, error) {
	q := r.SampleRate
	if !(q > 0 && q <= 1) {
		return accounting.Step{}, fmt.Errorf("--sample-rate %v must be in (0, 1]", q)
	}
	if !(r.Delta > 0 && r.Delta < 1) {
		return accounting.Step{}, fmt.Errorf("--delta %v must be in (0, 1)", r.Delta)
	}
	steps := r.Steps
	switch {
	case r.Epochs > 0 && steps >= 0:
		return accounting.Step{}, errors.New("give --steps or --epochs, not both")
	case r.Epochs > 0:
		steps = int(math.Ceil(r.Epochs/q - 1e-9))
	case r.Epochs < 0 || math.IsNaN(r.Epochs):
		return accounting.Step{}, fmt.Errorf("--epochs %v must be positive", r.Epochs)
	case steps < 0:
		return accounting.Step{}, errors.New("give the number of steps with --steps T (T ≥ 0), or --epochs E")
	}
	if !(r.MixWidth >= 0) || math.IsInf(r.MixWidth, 0) || r.LinfParts < 0 {
		return accounting.Step{}, errors.New("--mix-width must be finite and ≥ 0 and --linf-parts ≥ 0")
	}
	s := accounting.Step{
		Mechanism: accounting.Mechanism(r.Mechanism), NoiseMultiplier: sigma, SampleRate: q, Count: steps,
		Sensitivity: 1, NoiseStd: sigma, DatasetSize: r.DatasetSize, MixWidth: r.MixWidth, LinfParts: r.LinfParts,
	}
	switch r.Sampling {
	case "poisson":
		s.Sampling, s.Neighbouring = accounting.Poisson, accounting.AddRemove
	case "full":
		if q != 1 {
			return accounting.Step{}, fmt.Errorf("--sampling full needs --sample-rate 1, got %v", q)
		}
		s.Sampling, s.Neighbouring = accounting.FullBatch, accounting.AddRemove
	case "without-replacement":
		if r.DatasetSize <= 0 {
			return accounting.Step{}, errors.New("--sampling without-replacement needs --dataset-size N")
		}
		s.Sampling, s.Neighbouring = accounting.WithoutReplacement, accounting.ReplaceOne
		s.BatchSize = r.BatchSize
		if s.BatchSize == 0 {
			s.BatchSize = int(math.Round(q * float64(r.DatasetSize)))
		}
		// The analysis uses q = b/n; a --sample-rate that disagrees would misstate ε.
		if bq := float64(s.BatchSize) / float64(r.DatasetSize); math.Abs(bq-q) > 1e-9*q {
			return accounting.Step{}, fmt.Errorf("--sample-rate %v is not batch size / dataset size = %d/%d = %v: give consistent values", q, s.BatchSize, r.DatasetSize, bq)
		}
	case "poisson-with-rejection":
		if r.DatasetSize <= 0 || r.MinBatchSize < 1 {
			return accounting.Step{}, errors.New("--sampling poisson-with-rejection needs --dataset-size N and --min-batch-size N_B ≥ 1")
		}
		s.Sampling, s.Neighbouring, s.MinBatchSize = accounting.PoissonWithRejection, accounting.AddRemove, r.MinBatchSize
	default:
		return accounting.Step{}, fmt.Errorf("--sampling %q: want poisson, without-replacement, full or poisson-with-rejection", r.Sampling)
	}
	if r.MinBatchSize != 0 && s.Sampling != accounting.PoissonWithRejection {
		return accounting.Step{}, errors.New("--min-batch-size applies to --sampling poisson-with-rejection only")
	}
	switch s.Mechanism {
	case accounting.Gaussian, accounting.SampledWithRejectionGaussian:
	default:
		return accounting.Step{}, fmt.Errorf("--mechanism %q: want gaussian or sampled-with-rejection-gaussian", r.Mechanism)
	}
	return s, nil
}

// Run is what the accountants are told about the described run: plain SGD, every iterate
// released.
func (r Repeated) Run() accounting.Run {
	return accounting.Run{UpdateRule: "sgd", DatasetSize: r.DatasetSize}
}

// DeltaWarning says when δ is not below 1/n for the dataset size n given (datasetSize, or
// else batchSize/sampleRate), and is empty otherwise or when n is unknown: a δ that large
// allows a mechanism that publishes a few records outright, so the guarantee means little.
func DeltaWarning(delta float64, datasetSize, batchSize int, sampleRate float64) string {
	n := float64(datasetSize)
	if n == 0 && batchSize > 0 && sampleRate > 0 {
		n = float64(batchSize) / sampleRate
	}
	if n > 0 && delta >= 1/n {
		return fmt.Sprintf("--delta %g is not below 1/n = 1/%.0f: with δ ≥ 1/n a mechanism may publish whole records and still meet (ε, δ); use a δ well below 1/n, e.g. %.1g", delta, n, math.Pow(10, math.Floor(math.Log10(0.1/n))))
	}
	return ""
}

// DeltaWarning is DeltaWarning for the described steps' δ and dataset size.
func (r Repeated) DeltaWarning() string {
	return DeltaWarning(r.Delta, r.DatasetSize, r.BatchSize, r.SampleRate)
}

// Outcome is one mode's answer for the repeated steps: its guarantee, or, in Reason, why it
// has none.
type Outcome struct {
	Mode      string
	Guarantee accounting.Guarantee
	Reason    string
}

// EpsilonEach returns the guarantee of steps s under each named mode, in order (see Epsilon);
// a mode that cannot account for them gets its error message as its Reason, with the
// declaration fields it names named by field (accounting.Describe; nil: the fields' own names).
// Failed reports whether every mode failed.
func EpsilonEach(names []string, run accounting.Run, s accounting.Step, delta float64, field func(name string) string) (outcomes []Outcome, failed bool) {
	failed = true
	for _, name := range names {
		g, err := Epsilon(name, run, s, delta)
		o := Outcome{Mode: name, Guarantee: g}
		if err != nil {
			o.Guarantee, o.Reason = accounting.Guarantee{}, accounting.Describe(err, field)
		} else {
			failed = false
		}
		outcomes = append(outcomes, o)
	}
	return outcomes, failed
}

// Calibrate returns the smallest noise multiplier (to a relative tolerance of 1e-4, see
// accounting.CalibrateNoise) with which the described steps meet (target, r.Delta) under the
// named mode, the record of those steps and the guarantee it achieves, which always meets the
// target.
func Calibrate(name string, r Repeated, target float64) (float64, accounting.Step, accounting.Guarantee, error) {
	if _, err := r.Step(1); err != nil {
		return 0, accounting.Step{}, accounting.Guarantee{}, err
	}
	eps := func(sigma float64) (float64, error) {
		s, _ := r.Step(sigma)
		g, err := Epsilon(name, r.Run(), s, r.Delta)
		return g.Epsilon, err
	}
	sigma, err := accounting.CalibrateNoise(context.Background(), eps, target)
	if err != nil {
		return 0, accounting.Step{}, accounting.Guarantee{}, err
	}
	s, _ := r.Step(sigma)
	g, err := Epsilon(name, r.Run(), s, r.Delta)
	return sigma, s, g, err
}
