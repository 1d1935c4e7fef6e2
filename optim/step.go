package optim

import (
	"errors"
	"fmt"
	"math"

	"github.com/dptrain/dptrain/accounting"
	"github.com/dptrain/dptrain/data"
)

// Declaration is a BatchInfo's declaration as a step checks and records it. Neighbouring is
// the adjacency the guarantee is stated for: add/remove for the Poisson schemes, replace-one
// for fixed-size schemes and full batch (n is then public).
type Declaration struct {
	Sampling     accounting.Sampling
	SampleRate   float64
	BatchSize    int
	DatasetSize  int
	BatchIndex   int
	MinBatchSize int
	Neighbouring accounting.Neighbouring
}

// declOf reads info's declaration.
func declOf(info data.BatchInfo) Declaration {
	return Declaration{Sampling: accounting.Sampling(info.Scheme()), SampleRate: info.SampleRate(), BatchSize: info.BatchSize(),
		DatasetSize: info.DatasetSize(), BatchIndex: info.BatchIndex(), MinBatchSize: info.MinBatchSize()}
}

// Result is what one step did.
type Result struct {
	// Records are the accounting records of what the step released, one per mechanism
	// invocation. They are never empty: a non-private step returns a record whose Mechanism
	// is accounting.NonPrivate and whose NoiseMultiplier is 0, which every accountant
	// refuses (accounting.Step.Validate fails on it), so a run with such a step can never be
	// reported with a finite ε.
	Records []accounting.Step
	// Stats are the model's statistics on the batch. They are computed from private data
	// without noise: they are not covered by the records and are for monitoring only.
	Stats data.Stats
	// StepSize is the learning rate the step used.
	StepSize float64
}

// Optimizer is one private training algorithm: each call to Step takes one step on the model's
// parameters in place and returns what it released.
type Optimizer interface {
	Step(m GradientOracle, b data.Batch, info data.BatchInfo) (Result, error)
	// UpdateRule names the post-processing of the privatised gradient for accounting.Run:
	// "sgd", "momentum" or "adam".
	UpdateRule() string
	// Stateful reports whether the optimizer carries noisy gradients from one step to the
	// next (momentum, Adam), which hidden-state accountants refuse.
	Stateful() bool
	// Steps returns the number of steps taken.
	Steps() int
}

// BlockReleaser is implemented by optimizers whose step releases several records, each the
// noisy sum of one block of the parameters (DP-MBCD: one record per weight block, its Block
// field d): BlockSpan(d) is the block's offset and length in Params(). A record of an
// optimizer without it covers the whole parameter vector.
type BlockReleaser interface {
	BlockSpan(block int) (offset, n int)
}

// Initializer is implemented by optimizers that draw the initial iterate themselves (DP-SGLD's
// θ_0, Ryffel, Bach & Pointcheval's Lemma 3.3). The session calls Init once, when it begins,
// unless Initialized reports that it ran already (a restored checkpoint).
type Initializer interface {
	Init(params []float32)
	Initialized() bool
}

// NoiseDrawer is implemented by optimizers that draw all their randomness from one stream:
// NoiseStream returns it. A plan checks that it is the stream it gave the optimizer's
// constructor, so that an optimizer built with a stream of its own (a seeded one, say) cannot
// run in a session that reports itself private.
type NoiseDrawer interface {
	NoiseStream() *Noise
}

// BatchPlan is a validated BatchInfo (PlanBatch): the scheme, rate and the fixed normaliser of
// the gradient sum.
type BatchPlan struct {
	Info Declaration
	// Norm is the divisor of the noisy gradient sum, Normaliser of the step's records.
	Norm float64
}

// Normaliser returns the public divisor b of the noisy gradient sum that a step with record r
// released: the plain-SGD update of that step moves the parameters by −(r.StepSize/b) times
// the released sum, in which every example's contribution is bounded by r.Sensitivity. It is
// q·n for Poisson sampling (never the realised batch size, which is private), the rejection
// threshold N_B for Poisson sampling with rejection (Feng et al., "Forward learning with
// differential privacy", divide by N_B), the batch size for fixed-size schemes and n for full
// batch.
func Normaliser(r accounting.Step) float64 {
	switch r.Sampling {
	case accounting.Poisson:
		return r.SampleRate * float64(r.DatasetSize)
	case accounting.PoissonWithRejection:
		return float64(r.MinBatchSize)
	case accounting.FullBatch:
		return float64(r.DatasetSize)
	}
	return float64(r.BatchSize)
}

// PlanBatch validates info against the realised batch and returns the normaliser. The realised
// batch size is only compared with declared public sizes; it never enters a record.
func PlanBatch(bi data.BatchInfo, b data.Batch) (BatchPlan, error) {
	info := declOf(bi)
	if info.Sampling == "" {
		return BatchPlan{}, fmt.Errorf("optim: the batch declares no sampling scheme: take its BatchInfo from the data sampler that drew it (data.Sampler.Next, or data.PlannedBatch for a planned step)")
	}
	n := info.DatasetSize
	if n <= 0 {
		return BatchPlan{}, fmt.Errorf("optim: dataset size %d is not positive: the sampler declares n", n)
	}
	if b.N < 0 {
		return BatchPlan{}, fmt.Errorf("optim: batch has negative size %d", b.N)
	}
	p := BatchPlan{Info: info}
	switch info.Sampling {
	case accounting.Poisson, accounting.PoissonWithRejection:
		if info.Sampling == accounting.PoissonWithRejection {
			if info.MinBatchSize < 1 {
				return BatchPlan{}, fmt.Errorf("optim: %s sampling without a rejection threshold (BatchInfo.MinBatchSize = %d) is not supported: set it to N_B ≥ 1", info.Sampling, info.MinBatchSize)
			}
			if b.N < info.MinBatchSize {
				return BatchPlan{}, fmt.Errorf("optim: %s batch has %d examples, below the threshold %d: the sampler must redraw it", info.Sampling, b.N, info.MinBatchSize)
			}
		} else if info.MinBatchSize != 0 {
			return BatchPlan{}, fmt.Errorf("optim: Poisson batch declares a rejection threshold %d: use sampling %s", info.MinBatchSize, accounting.PoissonWithRejection)
		}
		q := info.SampleRate
		if !(q > 0 && q <= 1) {
			return BatchPlan{}, fmt.Errorf("optim: Poisson sample rate %v is outside (0, 1]", q)
		}
		if info.BatchSize != 0 {
			return BatchPlan{}, fmt.Errorf("optim: Poisson batch declares batch size %d: its size is random; leave BatchSize 0", info.BatchSize)
		}
		p.Norm = q * float64(n)
		if info.Sampling == accounting.PoissonWithRejection {
			p.Norm = float64(info.MinBatchSize)
		}
		if p.Info.Neighbouring == "" {
			p.Info.Neighbouring = accounting.AddRemove
		}
	case accounting.WithoutReplacement, accounting.Shuffled, accounting.ShuffledOnce:
		bs := info.BatchSize
		if bs <= 0 || bs > n {
			return BatchPlan{}, fmt.Errorf("optim: %s sampling needs 0 < batch size (%d) <= dataset size (%d)", info.Sampling, bs, n)
		}
		if b.N != bs {
			return BatchPlan{}, fmt.Errorf("optim: %s batch has %d examples, declared batch size %d: the sampler must not produce partial batches", info.Sampling, b.N, bs)
		}
		q := float64(bs) / float64(n)
		if info.SampleRate == 0 {
			p.Info.SampleRate = q
		} else if math.Abs(info.SampleRate-q) > 1e-12*q {
			return BatchPlan{}, fmt.Errorf("optim: sample rate %v differs from batch size / dataset size = %v", info.SampleRate, q)
		}
		p.Norm = float64(bs)
		if p.Info.Neighbouring == "" {
			p.Info.Neighbouring = accounting.ReplaceOne
		}
	case accounting.FullBatch:
		if b.N != n {
			return BatchPlan{}, fmt.Errorf("optim: full batch has %d examples, dataset size %d", b.N, n)
		}
		if info.SampleRate != 0 && info.SampleRate != 1 {
			return BatchPlan{}, fmt.Errorf("optim: full batch declares sample rate %v, want 1", info.SampleRate)
		}
		p.Info.SampleRate = 1
		p.Info.BatchSize = n
		p.Norm = float64(n)
		if p.Info.Neighbouring == "" {
			p.Info.Neighbouring = accounting.ReplaceOne
		}
	default:
		return BatchPlan{}, fmt.Errorf("optim: sampling scheme %q is not supported by this step", info.Sampling)
	}
	switch p.Info.Neighbouring {
	case accounting.AddRemove, accounting.ReplaceOne:
	default:
		return BatchPlan{}, fmt.Errorf("optim: unknown neighbouring relation %q", p.Info.Neighbouring)
	}
	return p, nil
}

// Record returns the accounting record of a Gaussian release of a gradient sum whose
// per-example contribution is bounded by sens (in l2) with noise of standard deviation std per
// coordinate, both in the units of the sum. std = 0 gives a non-private record.
func (p BatchPlan) Record(sens, std, lr float64) accounting.Step {
	s := accounting.Step{
		Mechanism:    accounting.Gaussian,
		Sampling:     p.Info.Sampling,
		Neighbouring: p.Info.Neighbouring,
		SampleRate:   p.Info.SampleRate,
		Count:        1,
		Sensitivity:  sens,
		NoiseStd:     std,
		StepSize:     lr,
		BatchSize:    p.Info.BatchSize,
		DatasetSize:  p.Info.DatasetSize,
		BatchIndex:   p.Info.BatchIndex,
		MinBatchSize: p.Info.MinBatchSize,
	}
	if std > 0 {
		s.NoiseMultiplier = std / sens
	} else {
		s.Mechanism = accounting.NonPrivate
	}
	return s
}

// CheckStepSize returns an error unless lr is a positive finite learning rate.
func CheckStepSize(lr float64, k int) error {
	if !(lr > 0) || math.IsInf(lr, 0) {
		return fmt.Errorf("optim: schedule gave step size %v at step %d: step sizes must be positive and finite", lr, k)
	}
	return nil
}

// CheckNoiseClip accepts σ > 0 with 0 < C < ∞ (private) and σ = 0 with C > 0 (non-private).
func CheckNoiseClip(sigma, clip float64) error {
	if !(sigma >= 0) || math.IsInf(sigma, 0) {
		return fmt.Errorf("optim: noise multiplier %v must be finite and non-negative (0: non-private)", sigma)
	}
	if !(clip > 0) {
		return fmt.Errorf("optim: clip norm %v must be positive (+Inf: no clipping, non-private only)", clip)
	}
	if sigma > 0 && math.IsInf(clip, 1) {
		return errors.New("optim: a private step needs a finite clip norm: with clip = +Inf the sensitivity is unbounded")
	}
	return nil
}

// ErrNotFinite reports a privatised gradient with NaN or infinite coordinates; the
// parameters were not updated. Training has diverged (or an input is not finite).
var ErrNotFinite = errors.New("the gradient is not finite (NaN or infinite coordinates); the parameters were not updated")

// ScaleFinite multiplies g by s and returns an error if any element is not finite.
func ScaleFinite(g []float32, s float64) error {
	if !scaleChunk(g, s) {
		return ErrNotFinite
	}
	return nil
}

// Resize returns a zeroed slice of length n, reusing buf's storage when it is large enough.
func Resize(buf []float32, n int) []float32 {
	if cap(buf) < n {
		return make([]float32, n)
	}
	buf = buf[:n]
	clear(buf)
	return buf
}
