package dpsgld

import (
	"fmt"
	"math"

	"github.com/dptrain/dptrain/accounting"
	"github.com/dptrain/dptrain/algorithm"
	"github.com/dptrain/dptrain/data"
	"github.com/dptrain/dptrain/optim"
)

// Name is DP-SGLD's optimizer.algorithm name.
const Name = "dp-sgld"

// Section is optimizer.dp_sgld: DP-SGLD's constants (Ryffel, Bach & Pointcheval, "Differential Privacy Guarantees for Stochastic Gradient Langevin Dynamics").
type Section struct {
	// Regularization is λ in (λ/2)‖θ‖², bias included; it is also the strong convexity.
	Regularization float64 `yaml:"regularization"`
	// Radius of the l2 ball iterates are projected onto; 0 uses sqrt(2 log C / λ) (a public bound on the minimiser: the regularised loss at 0 is log C).
	Radius float64 `yaml:"radius"`
	// Decreasing selects η_k = 1/(2β + λk/2) instead of the constant learning rate.
	Decreasing bool `yaml:"decreasing"`
}

// Algorithm is DP-SGLD (Ryffel, Bach & Pointcheval, Algorithm 1; Optimizer): softmax
// regression, Langevin noise, projection, last iterate only.
func Algorithm() algorithm.Algorithm {
	constants := func(c algorithm.Config, s *Section, classes int, bias bool) (Constants, error) {
		lc, err := SoftmaxConstants(c.FeatureNorm, classes, s.Regularization, bias)
		if err != nil {
			return lc, err
		}
		if s.Radius > 0 {
			lc.Radius = s.Radius
			lc.Lipschitz = lc.DataLipschitz + lc.StrongConvexity*lc.Radius
		}
		return lc, nil
	}
	return algorithm.Algorithm{
		Name: Name, Private: true, DataParallel: true,
		// Ryffel, Bach & Pointcheval's Algorithm 1 draws fixed-size batches without replacement.
		Sampling: []string{"without-replacement"}, SamplingReason: "its guarantee covers fixed-size batches drawn without replacement",
		Accountants: []string{"sgld", "rdp"},
		Section:     "dp_sgld", NewSection: func() any { return &Section{} },
		Validate: func(c algorithm.Config, section any) []error {
			s := section.(*Section)
			var errs []error
			if c.Optimizer.Update != "sgd" {
				errs = append(errs, fmt.Errorf("dp-sgld: optimizer.update must be sgd (its guarantee covers plain Langevin steps only)"))
			}
			if err := algorithm.Positive("optimizer.dp_sgld.regularization", s.Regularization); err != nil {
				errs = append(errs, err)
			}
			if c.FeatureNorm <= 0 {
				// L and β must not depend on the data (the paper's Section 5.1 β does; ours are public bounds).
				errs = append(errs, fmt.Errorf("dp-sgld: set data.feature_norm (a public bound R on ‖x‖) so that the loss's constants do not depend on the data"))
			}
			return errs
		},
		Prepare: func(e algorithm.Env) (algorithm.Plan, error) {
			s := e.Section.(*Section)
			if e.Model.Kind != "logreg" {
				return algorithm.Plan{}, fmt.Errorf("dp-sgld: its guarantee needs a strongly convex loss: use model.kind logreg (got %s)", e.Model.Name)
			}
			c, err := constants(e.Config, s, e.Classes, !e.Model.NoBias)
			if err != nil {
				return algorithm.Plan{}, err
			}
			if err := c.Validate(); err != nil {
				return algorithm.Plan{}, err
			}
			sched := e.Schedule
			if !s.Decreasing {
				if lr := e.Config.Optimizer.LearningRate; lr >= 1/c.Smoothness {
					// Ryffel, Bach & Pointcheval, Lemma 3.3.
					return algorithm.Plan{}, fmt.Errorf("dp-sgld: optimizer.learning_rate %g must be below 1/β = %g (β = R²/2 + λ with R = data.feature_norm and λ = optimizer.dp_sgld.regularization): lower it, or set optimizer.dp_sgld.decreasing: true", lr, 1/c.Smoothness)
				}
			} else {
				sched = Decreasing{Smoothness: c.Smoothness, StrongConvexity: c.StrongConvexity}
			}
			return algorithm.Plan{
				Run:    c.Run(e.DatasetSize),
				NoAuto: "dp-sgld: noise_multiplier auto is not supported (its ε depends on the whole step-size schedule): give σ explicitly and read ε from dptrain account compare",
				NewOptimizer: func(sigma float64, noise *optim.Noise) (optim.Optimizer, error) {
					return New(Config{Sigma: sigma, Constants: c, Schedule: sched, PlannedSteps: e.PlannedSteps}, noise)
				},
			}, nil
		},
		// DP-SGLD releases its last iterate on a strongly convex softmax regression whose
		// constants follow from the public feature bound (SoftmaxConstants). Its
		// config has no clip norm: noise_multiplier is read as the Langevin σ (parameter noise
		// sqrt(2η)·σ), turned into the record's z = σ·sqrt(2/η)·m/L with clip norm L, as
		// Optimizer declares its steps.
		Compare: func(cfg algorithm.Config, section any, run accounting.Run, step accounting.Step) (accounting.Run, accounting.Step, error) {
			s := section.(*Section)
			if s.Decreasing {
				return run, step, fmt.Errorf("the decreasing DP-SGLD schedule is not supported by compare (constant step sizes only): give the mechanism as flags with a constant --step-size")
			}
			spec, err := data.Lookup(cfg.Dataset)
			if err != nil {
				return run, step, err
			}
			c, err := constants(cfg, s, spec.Classes, cfg.Bias)
			if err != nil {
				return run, step, fmt.Errorf("DP-SGLD constants: %w", err)
			}
			r := c.Run(run.DatasetSize)
			r.UpdateRule = run.UpdateRule
			step.Neighbouring = accounting.ReplaceOne
			step.Sensitivity = c.Lipschitz
			if step.StepSize == 0 {
				step.StepSize = 1 / (2 * c.Smoothness)
			}
			step.NoiseMultiplier = step.NoiseMultiplier * math.Sqrt(2/step.StepSize) * float64(step.BatchSize) / c.Lipschitz
			return r, step, nil
		},
	}
}
