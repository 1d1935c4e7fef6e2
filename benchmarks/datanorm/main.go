// Command datanorm measures how much the normalisation of ScatterNet features changes what
// DP-SGD reaches: it trains a ScatterNet config once with the features standardised per
// channel by dataset-wide statistics (Tramèr & Boneh's "data normalization") instead of by
// per-example GroupNorm, and prints the test accuracy beside the ε the run and the
// statistics' release would cost together.
//
// It is a diagnostic, not a private run. The statistics are either exact (-stats exact: no
// noise, no finite ε) or clipped and released through a Gaussian mechanism whose noise is
// seeded (-stats noisy: the accuracy of the release Tramèr & Boneh use, but reproducible, so
// NOT private); the config must set a seed. dptrain train does not offer this normalisation:
// its features are normalised per example (data.features.groups), at no privacy cost.
//
//	go run -tags "openblas dnnl" ./benchmarks/datanorm -config configs/cifar10-jpeg-scatternet-linear-dpsgd.yaml \
//	    -stats noisy -clip 1 -stats-noise 8 -set seed=1 -set optimizer.noise_multiplier=5.67 -set privacy.target_epsilon=0
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"math"
	"os"
	"strings"

	"github.com/dptrain/dptrain"
	"github.com/dptrain/dptrain/accounting"
	"github.com/dptrain/dptrain/accounting/modes"
	"github.com/dptrain/dptrain/data"
	"github.com/dptrain/dptrain/optim"
	"github.com/dptrain/dptrain/train"
	"github.com/dptrain/dptrain/train/config"
)

type sets []string

func (s *sets) String() string     { return strings.Join(*s, ",") }
func (s *sets) Set(v string) error { *s = append(*s, v); return nil }

func main() {
	var (
		cfgPath = flag.String("config", "", "a ScatterNet config (its data.features.groups is ignored)")
		stats   = flag.String("stats", "exact", "exact: the dataset's statistics without noise; noisy: clipped and released with Gaussian noise")
		clip    = flag.Float64("clip", 1, "l2 clip of each example's vector of channel means, and of channel mean squares (noisy)")
		sigmaN  = flag.Float64("stats-noise", 8, "noise multiplier of the two Gaussian releases (noisy)")
		target  = flag.Float64("epsilon", 0, "noisy: calibrate DP-SGD's σ so that the run and the statistics' release together meet this ε under RDP (0: the config's σ)")
		over    sets
	)
	flag.Var(&over, "set", "a config override key=value (repeatable)")
	flag.Parse()
	if err := run(context.Background(), os.Stdout, *cfgPath, *stats, *clip, *sigmaN, *target, over); err != nil {
		fmt.Fprintln(os.Stderr, "datanorm:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, w io.Writer, path, stats string, clip, sigmaN, target float64, over []string) error {
	cfg, err := config.LoadConfig(path, over)
	if err != nil {
		return err
	}
	f := cfg.Data.Features
	if f.Kind != "scatternet" {
		return fmt.Errorf("%s has data.features.kind %q: give a ScatterNet config", path, f.Kind)
	}
	if cfg.Seed == nil {
		return fmt.Errorf("the config sets no seed: this diagnostic's statistics noise is seeded, so set one (-set seed=1); it is never a private run")
	}
	switch stats {
	case "exact":
		clip, sigmaN = 0, 0
	case "noisy":
		if !(clip > 0) || !(sigmaN > 0) {
			return fmt.Errorf("-stats noisy needs -clip > 0 and -stats-noise > 0 (got %v, %v)", clip, sigmaN)
		}
	default:
		return fmt.Errorf("-stats %q: use exact or noisy", stats)
	}
	// The all-in ε composes the releases with DP-SGD's Poisson steps (trainSteps): refuse,
	// before any work, a target for a run those records do not describe.
	o := cfg.Optimizer
	if target > 0 {
		switch {
		case stats != "noisy":
			return fmt.Errorf("-epsilon needs -stats noisy: exact statistics have no finite ε")
		case o.Algorithm != "dp-sgd" || o.Sampling != string(data.SchemePoisson):
			return fmt.Errorf("-epsilon composes DP-SGD steps on Poisson batches, and the config runs %s with %s sampling: set optimizer.algorithm=dp-sgd and optimizer.sampling=poisson, or give σ without -epsilon", o.Algorithm, o.Sampling)
		}
	}
	// The features without GroupNorm, through the trainer's own loading and feature cache.
	cfg.Data.Features.Groups = 0
	feat, _, _, err := train.LoadData(ctx, cfg, nil)
	if err != nil {
		return err
	}
	channels, n := feat.Shape[0], feat.Train.Len()
	m, err := feat.Train.ChannelMoments(channels, clip)
	if err != nil {
		return err
	}
	if stats == "noisy" {
		rng := optim.NewSeededNoise(*cfg.Seed ^ 0x6e6f726d).Rand()
		for c := range channels {
			m.Mean[c] += sigmaN * clip * rng.NormFloat64()
			m.Square[c] += sigmaN * clip * rng.NormFloat64()
		}
	}
	mean, std, err := m.Standardization(float64(n))
	if err != nil {
		return err
	}
	if err := feat.StandardizeWith(mean, std); err != nil {
		return err
	}
	if target > 0 {
		planned, err := dptrain.PlannedSteps(data.Scheme(o.Sampling), n, o.BatchSize, o.MinBatchSize, cfg.Training.Steps, cfg.Training.Epochs)
		if err != nil {
			return err
		}
		q := float64(o.BatchSize) / float64(n)
		sigma, err := accounting.CalibrateNoise(ctx, func(s float64) (float64, error) {
			g, err := compose("rdp", n, cfg.Privacy.Delta, releases(n, clip, sigmaN), trainSteps(n, s, q, planned, o.ClipNorm, o.BatchSize))
			return g.Epsilon, err
		}, target)
		if err != nil {
			return err
		}
		if cfg, err = config.LoadConfig(path, append(over, fmt.Sprintf("optimizer.noise_multiplier=%g", sigma), "privacy.target_epsilon=0")); err != nil {
			return err
		}
	}
	cfg.Data.Features = config.FeaturesConfig{}
	tr, err := train.New(ctx, cfg, train.Options{Dataset: feat})
	if err != nil {
		return err
	}
	res, err := tr.Run(ctx)
	if err != nil {
		return err
	}
	fmt.Fprintf(w, "dataset %s, %d channels, statistics %s (clip %g, noise multiplier %g, %d examples non-finite)\n", feat.Name, channels, stats, clip, sigmaN, m.NonFinite)
	fmt.Fprintf(w, "test accuracy %.2f%% after %d steps at σ = %.4f\n", 100*res.TestAccuracy, res.Steps, res.NoiseMultiplier)
	for _, g := range res.Epsilon {
		fmt.Fprintf(w, "training alone: ε[%s, %s] = %.3f\n", g.Mode, g.Label, g.Epsilon)
	}
	if stats == "exact" {
		fmt.Fprintln(w, "with the exact statistics released: no finite ε (a diagnostic)")
		return nil
	}
	steps := trainSteps(n, res.NoiseMultiplier, res.SampleRate, res.Steps, res.ClipNorm, res.BatchSize)
	for _, name := range []string{"rdp", "pld"} {
		// The steps' record, composed alone, must give the run's own ε.
		alone, err := compose(name, n, res.Delta, steps)
		if err != nil {
			return fmt.Errorf("%s: %w", name, err)
		}
		for _, g := range res.Epsilon {
			if g.Mode == name && math.Abs(g.Epsilon-alone.Epsilon) > 1e-9*g.Epsilon {
				return fmt.Errorf("%s: the training record composed here gives ε = %v, the run reports %v: the record does not describe the run", name, alone.Epsilon, g.Epsilon)
			}
		}
		g, err := compose(name, n, res.Delta, releases(n, clip, sigmaN), steps)
		if err != nil {
			return fmt.Errorf("%s: %w", name, err)
		}
		fmt.Fprintf(w, "training and the statistics' release: ε[%s, %s] = %.3f (δ = %g); seeded, so NOT private\n", name, g.Label, g.Epsilon, res.Delta)
	}
	return nil
}

// releases is the record of the two Gaussian releases of the clipped moment sums
// (sensitivity clip each under add/remove, every example in each).
func releases(n int, clip, sigmaN float64) accounting.Step {
	return accounting.Step{Mechanism: accounting.Gaussian, Sampling: accounting.FullBatch, Neighbouring: accounting.AddRemove,
		NoiseMultiplier: sigmaN, SampleRate: 1, Count: 2, Sensitivity: clip, NoiseStd: sigmaN * clip, BatchSize: n, DatasetSize: n}
}

// trainSteps is the record of count DP-SGD steps at σ on Poisson batches of rate q.
func trainSteps(n int, sigma, q float64, count int, clip float64, b int) accounting.Step {
	return accounting.Step{Mechanism: accounting.Gaussian, Sampling: accounting.Poisson, Neighbouring: accounting.AddRemove,
		NoiseMultiplier: sigma, SampleRate: q, Count: count, Sensitivity: clip, NoiseStd: sigma * clip, BatchSize: b, DatasetSize: n}
}

// compose returns the named accountant's guarantee, at δ, for the records in order.
func compose(name string, n int, delta float64, records ...accounting.Step) (accounting.Guarantee, error) {
	a, err := modes.New(name, accounting.Run{DatasetSize: n, UpdateRule: "momentum"})
	if err != nil {
		return accounting.Guarantee{}, err
	}
	for _, r := range records {
		if err := a.Compose(r); err != nil {
			return accounting.Guarantee{}, err
		}
	}
	return a.Epsilon(delta)
}
