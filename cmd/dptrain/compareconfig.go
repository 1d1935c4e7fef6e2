package main

import (
	"fmt"
	"math"

	"github.com/dptrain/dptrain/accounting/compare"
	"github.com/dptrain/dptrain/data"
	"github.com/dptrain/dptrain/train/config"
)

// describeFromConfig fills d from the training config at path, for "dptrain account compare
// --config": the dataset size, batch size, sampling, noise, clip norm, step size, update rule,
// δ and number of steps of the config, then the constants of its algorithm as the algorithm's
// registration declares them (config.Algorithms.CompareMechanism). A parameter for which set reports
// true, named by the flag of that command that sets it ("noise-multiplier"), keeps its value
// in d. A noise multiplier calibrated at training time (auto) must be given.
func describeFromConfig(path string, d *compare.Described, set func(flag string) bool) error {
	cfg, err := config.LoadConfig(path, nil)
	if err != nil {
		return err
	}
	op := cfg.Optimizer
	if op.NoiseMultiplier.Auto && !set("noise-multiplier") {
		return fmt.Errorf("config %s: noise_multiplier is auto (calibrated at training time): give --noise-multiplier", path)
	}
	n := cfg.Data.TrainSubset
	if n == 0 {
		spec, err := data.Lookup(cfg.Data.Dataset)
		if err != nil {
			return fmt.Errorf("config %s: %w", path, err)
		}
		n = spec.TrainSize
	}
	fill := func(name string, apply func()) {
		if !set(name) {
			apply()
		}
	}
	fill("dataset-size", func() { d.DatasetSize = n })
	fill("batch-size", func() { d.BatchSize = op.BatchSize })
	fill("sampling", func() { d.Sampling = op.Sampling })
	fill("min-batch-size", func() { d.MinBatchSize = op.MinBatchSize })
	fill("noise-multiplier", func() { d.NoiseMultiplier = op.NoiseMultiplier.Value })
	fill("clip-norm", func() { d.ClipNorm = op.ClipNorm })
	fill("step-size", func() { d.StepSize = op.LearningRate })
	fill("update-rule", func() { d.UpdateRule = op.Update })
	fill("delta", func() { d.Delta = cfg.Privacy.Delta })
	fill("steps", func() {
		d.Steps = cfg.Training.Steps
		if d.Steps == 0 && op.BatchSize > 0 {
			d.Steps = int(math.Ceil(cfg.Training.Epochs * float64(n) / float64(op.BatchSize)))
		}
	})
	// The algorithm's own part: its constants, as its registration declares them.
	run, step, err := config.Builtin().CompareMechanism(cfg, d.Run(), d.Record())
	if err != nil {
		return fmt.Errorf("config %s: %w", path, err)
	}
	fill("last-iterate-only", func() { d.LastIterateOnly = run.LastIterateOnly })
	fill("update-rule", func() { d.UpdateRule = run.UpdateRule })
	fill("convexity", func() { d.Convexity = string(run.Convexity) })
	fill("lipschitz", func() { d.Lipschitz = run.Lipschitz })
	fill("smoothness", func() { d.Smoothness = run.Smoothness })
	fill("strong-convexity", func() { d.StrongConvexity = run.StrongConvexity })
	fill("diameter", func() { d.Diameter = run.DomainDiameter })
	fill("holder-exponent", func() { d.Holder = run.HolderExponent })
	fill("prox-lipschitz", func() { d.ProxLipschitz = run.ProxLipschitz })
	fill("gradient-lipschitz", func() { d.GradientLipschitz = run.GradientLipschitz })
	fill("initial-lsi-inverse", func() { d.InitialLSIInverse = run.InitialLSIInverse })
	fill("neighbouring", func() { d.Neighbouring = string(step.Neighbouring) })
	fill("clip-norm", func() { d.ClipNorm = step.Sensitivity })
	fill("noise-multiplier", func() { d.NoiseMultiplier = step.NoiseMultiplier })
	fill("linf-parts", func() { d.LinfParts = step.LinfParts })
	fill("mix-width", func() { d.MixWidth = step.MixWidth })
	if d.StepSize == 0 {
		d.StepSize = step.StepSize
	}
	return nil
}
