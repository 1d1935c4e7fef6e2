package optim

import (
	"fmt"
	"math"
)

// Schedule gives the learning rate η_k of step k (from 0). Schedules are functions of the step
// index only, so they are data-independent as every analysis requires.
type Schedule interface {
	StepSize(k int) float64
}

// Constant is η_k = Rate.
type Constant struct{ Rate float64 }

func (s Constant) StepSize(int) float64 { return s.Rate }

// StepDecay is η_k = Rate·Gamma^⌊k/Every⌋: the rate is multiplied by Gamma every Every steps.
type StepDecay struct {
	Rate, Gamma float64
	Every       int
}

// NewStepDecay returns a step-decay schedule; rate > 0, gamma in (0, 1], every ≥ 1.
func NewStepDecay(rate, gamma float64, every int) (StepDecay, error) {
	if err := checkRate(rate); err != nil {
		return StepDecay{}, err
	}
	if !(gamma > 0 && gamma <= 1) {
		return StepDecay{}, fmt.Errorf("optim: step decay factor %v is outside (0, 1]", gamma)
	}
	if every < 1 {
		return StepDecay{}, fmt.Errorf("optim: step decay period %d must be at least 1 step", every)
	}
	return StepDecay{Rate: rate, Gamma: gamma, Every: every}, nil
}

func (s StepDecay) StepSize(k int) float64 {
	return s.Rate * math.Pow(s.Gamma, float64(k/s.Every))
}

// Cosine is a linear warm-up from Rate/Warmup to Rate over the first Warmup steps, then cosine
// annealing (Loshchilov & Hutter 2017, without restarts) from Rate to Min over the remaining
// Total−Warmup steps, and Min afterwards:
//
//	η_k = Rate·(k+1)/Warmup                                        k < Warmup
//	η_k = Min + (Rate−Min)·(1 + cos(π·(k−Warmup)/(Total−Warmup)))/2   Warmup ≤ k < Total
type Cosine struct {
	Rate, Min     float64
	Total, Warmup int
}

// NewCosine returns a cosine schedule; 0 ≤ min ≤ rate, 0 ≤ warmup < total.
func NewCosine(rate, minRate float64, total, warmup int) (Cosine, error) {
	if err := checkRate(rate); err != nil {
		return Cosine{}, err
	}
	if !(minRate >= 0 && minRate <= rate) {
		return Cosine{}, fmt.Errorf("optim: cosine minimum rate %v is outside [0, %v]", minRate, rate)
	}
	if warmup < 0 || warmup >= total {
		return Cosine{}, fmt.Errorf("optim: cosine schedule needs 0 <= warmup (%d) < total steps (%d)", warmup, total)
	}
	return Cosine{Rate: rate, Min: minRate, Total: total, Warmup: warmup}, nil
}

func (s Cosine) StepSize(k int) float64 {
	if k < s.Warmup {
		return s.Rate * float64(k+1) / float64(s.Warmup)
	}
	if k >= s.Total {
		return s.Min
	}
	t := float64(k-s.Warmup) / float64(s.Total-s.Warmup)
	return s.Min + (s.Rate-s.Min)*(1+math.Cos(math.Pi*t))/2
}

func checkRate(r float64) error {
	if !(r > 0) || math.IsInf(r, 0) {
		return fmt.Errorf("optim: learning rate %v must be positive and finite", r)
	}
	return nil
}
