package tune

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"

	"github.com/dptrain/dptrain"
	"github.com/dptrain/dptrain/accounting"
	"github.com/dptrain/dptrain/accounting/rdp"
	"github.com/dptrain/dptrain/accounting/tuning"
	"github.com/dptrain/dptrain/data"
	"github.com/dptrain/dptrain/train/config"
)

// Setting is what one candidate's privacy depends on: the sample rate and the number of steps
// of its Poisson-sampled Gaussian run, and the noise multiplier calibrated for them.
type Setting struct {
	BatchSize       int     `json:"batch_size"`
	SampleRate      float64 `json:"sample_rate"`
	Steps           int     `json:"steps"`
	NoiseMultiplier float64 `json:"noise_multiplier"`
}

// Calibration is the noise of every setting a candidate can draw, and what the search costs.
type Calibration struct {
	Settings []Setting `json:"settings"`
	// ScoreNoise is σ_s of each candidate's noisy validation count.
	ScoreNoise float64 `json:"score_noise"`
	// Candidate is one candidate (any setting: the pointwise maximum of their RDP curves, plus
	// the score's) converted at δ; Search is the whole search, the best of K released.
	Candidate accounting.Guarantee `json:"candidate"`
	Search    accounting.Guarantee `json:"search"`
}

// settings lists the distinct (sample rate, steps) pairs the space allows for n training
// examples: every batch size and length the space lists (or the base config's), as train
// would resolve them.
func settings(base []byte, s *Space, n int) ([]Setting, error) {
	var batches, lengths []string
	for _, p := range s.Parameters {
		if p.Values == nil {
			continue
		}
		var vals []string
		for i := range p.Values {
			v, err := flow(&p.Values[i])
			if err != nil {
				return nil, err
			}
			vals = append(vals, p.Key+"="+v)
		}
		switch p.Key {
		case "optimizer.batch_size":
			batches = vals
		case "training.epochs", "training.steps":
			lengths = vals
		}
	}
	if batches == nil {
		batches = []string{""}
	}
	if lengths == nil {
		lengths = []string{""}
	}
	var out []Setting
	for _, b := range batches {
		for _, l := range lengths {
			var sets []string
			for _, o := range []string{b, l} {
				if o != "" {
					sets = append(sets, o)
				}
			}
			cfg, err := config.ParseConfig(base, sets)
			if err != nil {
				return nil, err
			}
			st, err := settingOf(cfg, n)
			if err != nil {
				return nil, err
			}
			dup := false
			for _, o := range out {
				dup = dup || o.SampleRate == st.SampleRate && o.Steps == st.Steps
			}
			if !dup {
				out = append(out, st)
			}
		}
	}
	return out, nil
}

// settingOf is the setting of a candidate config trained on n examples, as train resolves it.
func settingOf(cfg *config.Config, n int) (Setting, error) {
	o := cfg.Optimizer
	smp, err := data.NewSampler(data.SchemePoisson, n, o.BatchSize, 0, rand.New(rand.NewPCG(0, 0)))
	if err != nil {
		return Setting{}, fmt.Errorf("optimizer.batch_size %d with %d training examples: %w", o.BatchSize, n, err)
	}
	steps, err := dptrain.PlannedSteps(data.SchemePoisson, n, o.BatchSize, 0, cfg.Training.Steps, cfg.Training.Epochs)
	if err != nil {
		return Setting{}, err
	}
	if steps < 1 {
		return Setting{}, fmt.Errorf("training.epochs %v with batch size %d: a candidate runs no step; lengthen it", cfg.Training.Epochs, o.BatchSize)
	}
	return Setting{BatchSize: o.BatchSize, SampleRate: smp.SampleRate(), Steps: steps}, nil
}

// scoreCurve is the RDP of the Gaussian mechanism with sensitivity 1 and noise σ_s at each
// order: λ/(2σ_s²), rounded up.
func scoreCurve(sigma float64, orders []float64) []float64 {
	c := make([]float64, len(orders))
	for i, a := range orders {
		c[i] = accounting.RoundUp(a / (2 * sigma * sigma))
	}
	return c
}

// candidateCurve is the RDP curve of one candidate: the pointwise maximum over the settings of
// their training curves, plus the score's curve.
//
// The maximum over settings: a candidate draws its setting at random, independently of the
// data, so its output law is a mixture of the settings' laws, and a mixture's Rényi divergence
// at each order is at most the largest of its components' (exp((λ−1)D_λ) is jointly convex).
//
// The sum with the score: the candidate trains on the first n − v training examples and is
// scored on the last v, disjoint examples, a split fixed by position before the search. A
// neighbouring dataset adds or removes one record in one part only, so by parallel
// composition the maximum of the two curves would do. We add them instead (sequential
// composition, which needs no argument about the split): at the default σ_s the score's curve
// is far below the training curve at the orders that set ε, so the sum costs little, and it
// stays sound if a record were in both parts (a duplicate example).
func candidateCurve(sets []Setting, scoreNoise float64, orders []float64) ([]float64, error) {
	curve := make([]float64, len(orders))
	for _, s := range sets {
		c, err := tuning.SampledGaussianCurve(s.SampleRate, s.NoiseMultiplier, s.Steps, orders)
		if err != nil {
			return nil, err
		}
		for i := range curve {
			curve[i] = math.Max(curve[i], c[i])
		}
	}
	for i, r := range scoreCurve(scoreNoise, orders) {
		curve[i] = accounting.RoundUp(curve[i] + r)
	}
	return curve, nil
}

// Guarantees returns the (ε, δ) of one candidate and of the whole search over K ~ dist
// candidates, each of whose settings (noise multipliers set) is among sets.
func Guarantees(sets []Setting, scoreNoise float64, dist tuning.Distribution, delta float64) (candidate, search accounting.Guarantee, err error) {
	orders := rdp.DefaultOrders()
	curve, err := candidateCurve(sets, scoreNoise, orders)
	if err != nil {
		return candidate, search, err
	}
	eps, order, err := accounting.RDPToEpsilon(orders, curve, delta)
	if err != nil {
		return candidate, search, fmt.Errorf("tune: one candidate: %w", err)
	}
	candidate = accounting.Guarantee{Accountant: "rdp", Label: accounting.Certified, Epsilon: eps, Delta: delta, Order: order}
	r, err := tuning.RDPFromCurve(orders, curve, dist)
	if err != nil {
		return candidate, search, err
	}
	if eps, order, err = accounting.RDPToEpsilon(orders, r, delta); err != nil {
		return candidate, search, fmt.Errorf("tune: the search: %w", err)
	}
	search = accounting.Guarantee{Accountant: tuning.Name, Label: accounting.Certified, Epsilon: eps, Delta: delta, Order: order}
	return candidate, search, nil
}

// Calibrate sets the noise multiplier of every setting so that the whole search meets
// (target, delta). Each setting is first calibrated alone: the σ at which a search whose
// every candidate had that setting would meet a per-setting target (at first the target
// itself). The search is then checked with the pointwise maximum of the settings' curves;
// while its ε is above the target, the per-setting target is lowered by the ratio (raising
// every σ) and the settings calibrated again. The Calibration returned always meets the target.
func Calibrate(ctx context.Context, sets []Setting, scoreNoise float64, dist tuning.Distribution, target, delta float64) (Calibration, error) {
	if len(sets) == 0 {
		return Calibration{}, errors.New("tune: no setting to calibrate")
	}
	sets = append([]Setting(nil), sets...)
	per := target
	for range 100 {
		for i := range sets {
			sigma, err := accounting.CalibrateNoise(ctx, func(sigma float64) (float64, error) {
				s := sets[i]
				s.NoiseMultiplier = sigma
				_, g, err := Guarantees([]Setting{s}, scoreNoise, dist, delta)
				return g.Epsilon, err
			}, per)
			if err != nil {
				if ctx.Err() != nil {
					return Calibration{}, err
				}
				return Calibration{}, calibrationError(sets[i], scoreNoise, dist, target, delta, err)
			}
			sets[i].NoiseMultiplier = sigma
		}
		cand, search, err := Guarantees(sets, scoreNoise, dist, delta)
		if err != nil {
			return Calibration{}, err
		}
		if search.Epsilon <= target {
			return Calibration{Settings: sets, ScoreNoise: scoreNoise, Candidate: cand, Search: search}, nil
		}
		per *= target / search.Epsilon * 0.999
	}
	return Calibration{}, fmt.Errorf("tune: calibration did not meet ε ≤ %g after 100 rounds: report this with the space file", target)
}

// calibrationError explains a setting the target cannot be met for: often the score's noise
// alone spends it.
func calibrationError(s Setting, scoreNoise float64, dist tuning.Distribution, target, delta float64, err error) error {
	huge := s
	huge.NoiseMultiplier = 1e4
	if _, g, gerr := Guarantees([]Setting{huge}, scoreNoise, dist, delta); gerr == nil && g.Epsilon > target {
		return fmt.Errorf("tune: the search cannot meet ε = %g: scoring the candidates alone (validation.noise σ_s = %g) costs ε = %.4g with K ~ %s; raise validation.noise or validation.fraction, or the target", target, scoreNoise, g.Epsilon, dist)
	}
	return fmt.Errorf("tune: no noise multiplier meets ε = %g for batch size %d and %d steps (sample rate %.4g): %w", target, s.BatchSize, s.Steps, s.SampleRate, err)
}
