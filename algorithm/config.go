package algorithm

import "fmt"

// OptimizerConfig is the private algorithm and its update rule.
type OptimizerConfig struct {
	// Algorithm is a registered algorithm's name: dp-sgd, sgd (non-private baseline), dp-sgld,
	// modelmix, dp-ulr, dp-mbcd, mbcd (package builtin).
	Algorithm string `yaml:"algorithm"`
	// Update is the rule applied to the privatised gradient: sgd, momentum, nesterov, adam.
	Update       string  `yaml:"update"`
	LearningRate float64 `yaml:"learning_rate"`
	Momentum     float64 `yaml:"momentum"`
	Beta1        float64 `yaml:"beta1"`
	Beta2        float64 `yaml:"beta2"`
	AdamEps      float64 `yaml:"adam_eps"`
	WeightDecay  float64 `yaml:"weight_decay"`
	// Schedule is the learning-rate schedule.
	Schedule ScheduleConfig `yaml:"schedule"`
	// BatchSize is the expected batch size: q = BatchSize/n under Poisson sampling.
	BatchSize int `yaml:"batch_size"`
	// Sampling is poisson (default), shuffled, shuffled-once, without-replacement or
	// poisson-with-rejection.
	Sampling string `yaml:"sampling"`
	// MinBatchSize is the rejection threshold N_B of poisson-with-rejection: a Poisson batch
	// smaller than it is redrawn (Feng et al., "Forward Learning with Differential Privacy", Definition 3.4). 0 (unset) picks the largest N_B
	// whose rejection term, added to every Rényi order of every step, is ≤ 1e-10
	// (ulr.DefaultMinBatchSize, from the rejection term of Feng et al.'s Eq. 9), and logs it.
	MinBatchSize int `yaml:"min_batch_size"`
	// ClipNorm is the per-sample l2 clipping threshold C.
	ClipNorm float64 `yaml:"clip_norm"`
	// NoiseMultiplier is σ (noise std / C), or "auto" to calibrate σ before training to
	// privacy.target_epsilon over the configured epochs.
	NoiseMultiplier NoiseMultiplier `yaml:"noise_multiplier"`

	// Sections holds the algorithms' own sections (optimizer.dp_sgld, optimizer.modelmix, ...),
	// each decoded strictly by its algorithm's registration (see Algorithm.Section).
	Sections map[string]any `yaml:",inline"`
}

// ScheduleConfig is a learning-rate schedule.
type ScheduleConfig struct {
	// Kind is constant (default), step or cosine.
	Kind string `yaml:"kind"`
	// StepEvery and Gamma: the step schedule multiplies the rate by Gamma every StepEvery steps.
	StepEvery int     `yaml:"step_every"`
	Gamma     float64 `yaml:"gamma"`
	// WarmupSteps ramps the rate linearly from 0 (cosine).
	WarmupSteps int `yaml:"warmup_steps"`
	// MinRate is cosine's final rate.
	MinRate float64 `yaml:"min_rate"`
}

// NoiseMultiplier is σ, or Auto to calibrate it.
type NoiseMultiplier struct {
	Value float64
	Auto  bool
}

// UnmarshalYAML accepts a number or the word auto. It has the signature of yaml.v2's
// Unmarshaler, which yaml.v3 honours too and which names no type of a YAML library: the
// config layer (package train) reads the YAML, this package imports none.
func (n *NoiseMultiplier) UnmarshalYAML(unmarshal func(any) error) error {
	var s string
	if err := unmarshal(&s); err == nil && s == "auto" {
		*n = NoiseMultiplier{Auto: true}
		return nil
	}
	var v float64
	if err := unmarshal(&v); err != nil {
		return fmt.Errorf("noise_multiplier %q: want a number or auto", s)
	}
	*n = NoiseMultiplier{Value: v}
	return nil
}

// MarshalYAML writes auto or the number.
func (n NoiseMultiplier) MarshalYAML() (any, error) {
	if n.Auto {
		return "auto", nil
	}
	return n.Value, nil
}

// Config is what an algorithm reads of a run's config: the optimizer section and the few data
// and model keys its assumptions name. The trainer fills it from the whole config.
type Config struct {
	Optimizer OptimizerConfig
	// Dataset is data.dataset.
	Dataset string
	// FeatureNorm is data.feature_norm: a public bound R on every example's ‖x‖₂ (0: none).
	FeatureNorm float64
	// Bias is model.bias (true unless the config sets it false).
	Bias bool
	// Accountants and StopAccountant are privacy.accountants and privacy.stop_accountant
	// ("" when the trainer is to pick a certified one).
	Accountants    []string
	StopAccountant string
}
