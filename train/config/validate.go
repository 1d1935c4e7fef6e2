package config

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"

	"github.com/dptrain/dptrain/accounting/modes"
	"github.com/dptrain/dptrain/algorithm"
	"github.com/dptrain/dptrain/algorithm/dpsgd"
	"github.com/dptrain/dptrain/data"
)

// setDefaults fills the keys a config may leave out; the algorithm's registration gives its
// default sampling and accountants.
func (r *Algorithms) setDefaults(c *Config) {
	if c.Name == "" {
		c.Name = "run"
	}
	if c.Data.Normalize == "" {
		c.Data.Normalize = "standard"
	}
	o := &c.Optimizer
	if o.Algorithm == "" {
		o.Algorithm = dpsgd.Name
	}
	if o.Update == "" {
		o.Update = "sgd"
	}
	alg, lookupErr := r.Lookup(o.Algorithm)
	known := lookupErr == nil
	if o.Sampling == "" {
		o.Sampling = "poisson"
		if known && len(alg.Sampling) > 0 {
			o.Sampling = alg.Sampling[0]
		}
	}
	if o.Schedule.Kind == "" {
		o.Schedule.Kind = "constant"
	}
	if o.Beta1 == 0 {
		o.Beta1 = 0.9
	}
	if o.Beta2 == 0 {
		o.Beta2 = 0.999
	}
	if o.AdamEps == 0 {
		o.AdamEps = 1e-8
	}
	p := &c.Privacy
	if len(p.Accountants) == 0 && known && alg.Private {
		p.Accountants = slices.Clone(alg.Accountants)
	}
	if p.Release == "" {
		p.Release = "final"
	}
	if c.Training.KeepCheckpoints == 0 {
		c.Training.KeepCheckpoints = 2
	}
	if c.Training.LogEvery == 0 {
		c.Training.LogEvery = 50
	}
	if c.Training.PrivacyEvery == 0 {
		c.Training.PrivacyEvery = 1
		// PLD and Chien & Li queries cost milliseconds to a second; the others microseconds.
		if slices.Contains(p.Accountants, "pld") || slices.Contains(p.Accountants, "chien-li") {
			c.Training.PrivacyEvery = c.Training.LogEvery
		}
	}
	if c.Output.Dir == "" {
		c.Output.Dir = "runs/" + c.Name
	}
}

// Validate checks the config against the Builtin algorithms (see Algorithms.Validate).
func (c *Config) Validate() error { return Builtin().Validate(c) }

// Validate checks the config before any work is done and returns every problem found, each
// naming the key and what to write instead: the common keys here, the algorithm's own
// through its registration.
func (r *Algorithms) Validate(c *Config) error {
	var errs []error
	bad := func(format string, args ...any) { errs = append(errs, fmt.Errorf(format, args...)) }
	pos := func(key string, v float64) {
		if err := algorithm.Positive(key, v); err != nil {
			errs = append(errs, err)
		}
	}

	if c.Data.Dataset == "" {
		bad("data.dataset is missing: e.g. fashion-mnist, mnist, cifar10")
	}
	if !oneOf(c.Data.Normalize, "standard", "unit", "none") {
		bad("data.normalize = %q: want standard, unit or none", c.Data.Normalize)
	}
	errs = append(errs, validateImageFolder(c.Data)...)
	if f := c.Data.Features; f.Kind != "" {
		if f.Kind != "scatternet" {
			bad("data.features.kind = %q: want scatternet (or leave it out for raw inputs)", f.Kind)
		}
		if f.J < 0 || f.J > 6 || f.L < 0 || f.Groups < 0 {
			bad("data.features: j in 1..6, l ≥ 1 and groups ≥ 0 (0 means j = 2, l = 8, no normalisation)")
		}
	}
	if c.Data.FeatureNorm < 0 || c.Data.TrainSubset < 0 || c.Data.TestSubset < 0 {
		bad("data.feature_norm, data.train_subset and data.test_subset must not be negative")
	}
	errs = append(errs, r.validateAugment(c)...)
	switch c.Model.Engine {
	case "", "auto", "direct", "dnnl", "graph":
	default:
		bad("model: model.engine %q is not auto, direct, dnnl or graph", c.Model.Engine)
	}
	if c.Model.Preset == "" && c.Model.Kind == "" {
		bad("model: set model.preset (e.g. cnn-tramer-boneh) or model.kind (logreg, mlp, cnn)")
	}
	if c.Model.Preset != "" && (c.Model.Kind != "" || len(c.Model.Hidden) > 0 || len(c.Model.Layers) > 0) {
		bad("model: model.preset %q cannot be combined with kind, hidden or layers", c.Model.Preset)
	}

	o := c.Optimizer
	alg, err := r.Lookup(o.Algorithm)
	if err != nil {
		errs = append(errs, err)
	}
	section, serrs := r.Sections(o)
	errs = append(errs, serrs...)
	if !oneOf(o.Update, "sgd", "momentum", "nesterov", "adam") {
		bad("optimizer.update = %q: want sgd, momentum, nesterov or adam", o.Update)
	}
	pos("optimizer.learning_rate", o.LearningRate)
	if o.BatchSize <= 0 {
		bad("optimizer.batch_size = %d: must be positive", o.BatchSize)
	}
	if !oneOf(o.Sampling, "poisson", "shuffled", "shuffled-once", "without-replacement", "poisson-with-rejection") {
		bad("optimizer.sampling = %q: want poisson, shuffled, shuffled-once, without-replacement or poisson-with-rejection", o.Sampling)
	} else if len(alg.Sampling) > 0 && !oneOf(o.Sampling, alg.Sampling...) {
		want := alg.Sampling[0]
		if len(alg.Sampling) > 1 {
			want = "one of " + strings.Join(alg.Sampling, ", ")
		}
		bad("%s: optimizer.sampling must be %s (%s)", alg.Name, want, alg.SamplingReason)
	}
	switch {
	case o.Sampling == "poisson-with-rejection" && o.MinBatchSize < 0:
		bad("optimizer.min_batch_size = %d: poisson-with-rejection needs the rejection threshold N_B ≥ 1, or 0 (unset) for the default (the largest N_B whose rejection term is ≤ 1e-10 per step)", o.MinBatchSize)
	case o.Sampling != "poisson-with-rejection" && o.MinBatchSize != 0:
		bad("optimizer.min_batch_size is set but optimizer.sampling is %s: it is the threshold of poisson-with-rejection; remove it or change the sampling", o.Sampling)
	case o.MinBatchSize > o.BatchSize && o.BatchSize > 0:
		bad("optimizer.min_batch_size = %d exceeds optimizer.batch_size = %d (the expected batch size): almost every draw would be rejected", o.MinBatchSize, o.BatchSize)
	}
	if (o.Update == "momentum" || o.Update == "nesterov") && !(o.Momentum > 0 && o.Momentum < 1) {
		bad("optimizer.momentum = %v: must be in (0, 1) with update %s", o.Momentum, o.Update)
	}
	if o.WeightDecay < 0 {
		bad("optimizer.weight_decay = %v: must not be negative", o.WeightDecay)
	}
	switch o.Schedule.Kind {
	case "constant", "cosine":
	case "step":
		if o.Schedule.StepEvery <= 0 || !(o.Schedule.Gamma > 0) {
			bad("optimizer.schedule: kind step needs step_every > 0 and gamma > 0")
		}
	default:
		bad("optimizer.schedule.kind = %q: want constant, step or cosine", o.Schedule.Kind)
	}

	private := err != nil || alg.Private
	p := c.Privacy
	if private {
		if p.Delta == 0 {
			bad("privacy.delta is missing or 0: set δ below 1/n, e.g. privacy.delta: 1.0e-5")
		} else if !(p.Delta > 0 && p.Delta < 1) {
			bad("privacy.delta = %v: must be in (0, 1), typically below 1/n (e.g. 1e-5)", p.Delta)
		}
		if p.TargetEpsilon < 0 || math.IsInf(p.TargetEpsilon, 0) || math.IsNaN(p.TargetEpsilon) {
			bad("privacy.target_epsilon = %v: must be a positive number, or 0 for no target", p.TargetEpsilon)
		}
		if alg.ClipNorm {
			pos("optimizer.clip_norm", o.ClipNorm)
		}
		if o.NoiseMultiplier.Auto {
			if p.TargetEpsilon == 0 {
				bad("optimizer.noise_multiplier is auto but privacy.target_epsilon is not set: give a target ε to calibrate to")
			}
		} else {
			pos("optimizer.noise_multiplier", o.NoiseMultiplier.Value)
			// The noise is drawn and added in float32: a standard deviation σ·C within a
			// factor of 64 of float32's largest value makes noisy sums infinite.
			if sd := o.NoiseMultiplier.Value * o.ClipNorm; alg.ClipNorm && sd > math.MaxFloat32/64 {
				bad("optimizer.noise_multiplier × optimizer.clip_norm = %g × %g = %g: the Gaussian noise's standard deviation σ·C is beyond float32's range (%.3g; the noise is added in float32, so every noisy sum would be infinite): lower the noise multiplier or the clip norm",
					o.NoiseMultiplier.Value, o.ClipNorm, sd, math.MaxFloat32/64)
			}
		}
		if len(p.Accountants) == 0 {
			bad("privacy.accountants is empty: list at least one, e.g. [rdp]")
		}
		for _, name := range p.Accountants {
			if !slices.Contains(modes.Names(), name) {
				bad("privacy.accountants: unknown accountant %q%s: want one of %s", name, nearest(name, modes.Names()), strings.Join(modes.Names(), ", "))
			}
		}
		if !oneOf(p.Release, "final", "all-iterates") {
			bad("privacy.release = %q: want final or all-iterates", p.Release)
		}
		if p.StopAccountant != "" && !oneOf(p.StopAccountant, p.Accountants...) {
			bad("privacy.stop_accountant = %q is not among privacy.accountants %v", p.StopAccountant, p.Accountants)
		}
	} else {
		if p.TargetEpsilon > 0 || o.NoiseMultiplier.Auto || o.NoiseMultiplier.Value != 0 {
			bad("optimizer.algorithm %s is a non-private baseline: remove privacy.target_epsilon and optimizer.noise_multiplier, or use dp-sgd", alg.Name)
		}
	}
	if alg.Validate != nil {
		errs = append(errs, alg.Validate(c.AlgorithmConfig(), section)...)
	}

	t := c.Training
	if t.Steps < 0 || t.Epochs < 0 || (t.Steps == 0 && !(t.Epochs > 0)) {
		bad("training: set training.epochs > 0 or training.steps > 0")
	}
	if t.EvalEvery < 0 || t.CheckpointEvery < 0 || t.LogEvery < 0 || t.PrivacyEvery < 0 || t.KeepCheckpoints < 0 {
		bad("training.eval_every, checkpoint_every, keep_checkpoints, log_every and privacy_every must not be negative")
	}
	if !(t.EMA >= 0 && t.EMA < 1) {
		bad("training.ema = %v: want a decay in [0, 1), e.g. 0.999 (0: release the last iterate)", t.EMA)
	}
	if strings.TrimSpace(c.Output.Dir) == "" {
		bad("output.dir is empty")
	}
	return errors.Join(errs...)
}

func oneOf(s string, set ...string) bool {
	for _, x := range set {
		if s == x {
			return true
		}
	}
	return false
}

// validateImageFolder checks the keys of image-folder datasets: data.path names the images of
// image-folder (or cifar10-jpeg's archive), data.classes only image-folder's classes, and
// image-folder has no published mean and std to standardise with.
func validateImageFolder(d DataConfig) []error {
	var errs []error
	name := d.Dataset
	if spec, err := data.Lookup(d.Dataset); err == nil {
		name = spec.Name
	}
	switch {
	case name == data.ImageFolderName && d.Path == "":
		errs = append(errs, errors.New("data.path is missing: image-folder reads your own images from a folder or .tar.gz of train/CLASS/IMAGE and test/CLASS/IMAGE files (JPEG or PNG)"))
	case d.Path != "" && name != data.ImageFolderName && name != data.CIFAR10JPEG:
		errs = append(errs, fmt.Errorf("data.path is for image-folder and cifar10-jpeg, not %s: use data.dir", d.Dataset))
	}
	if d.Path != "" && d.Dir != "" {
		errs = append(errs, errors.New("data.path and data.dir both say where the files are: keep one"))
	}
	if len(d.Classes) > 0 && name != data.ImageFolderName {
		errs = append(errs, fmt.Errorf("data.classes is for image-folder datasets; %s has fixed classes: leave it out", d.Dataset))
	}
	if name == data.ImageFolderName && d.Normalize == data.NormalizeStandard {
		errs = append(errs, errors.New("data.normalize = standard needs published per-channel constants, which your own images do not have: set data.normalize: unit"))
	}
	return errs
}
