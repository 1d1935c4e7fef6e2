package main

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"
	"gonum.org/v1/gonum/stat"

	"github.com/dptrain/dptrain/accounting"
	"github.com/dptrain/dptrain/accounting/mbcd"
	"github.com/dptrain/dptrain/accounting/rdp"
	"github.com/dptrain/dptrain/data"
	"github.com/dptrain/dptrain/models/nmf"
	"github.com/dptrain/dptrain/optim"
)

func init() { subcommands = append(subcommands, newNMFCmd) }

// nmfFlags are the settings of dptrain nmf (Chen & Liu, "Hidden State Differential Private Mini-Batch Block Coordinate Descent", Appendix D.1.1,
// Table 2).
type nmfFlags struct {
	batches              []int
	methods              []string
	epochs, seeds, inner int
	rows, cols, rank     int
	eta, kappa, rowNorm  float64
	clip, target, alpha  float64
	delta                float64
	dataSeed             uint64
	noiseSeed            int64
}

// nmfMethods: the private block method, DP-SGD on the same objective, and both at σ = 0.
// dp-mbcd-certified recomputes the hidden rows at every visit (the condition mbcd-certified
// needs) and calibrates σ under mbcd-certified.
var nmfMethods = map[string]struct {
	joint, private, certified bool
}{
	"dp-mbcd": {false, true, false}, "dp-mbcd-certified": {false, true, true},
	"dp-sgd": {true, true, false}, "mbcd": {false, false, false}, "sgd": {true, false, false},
}

func newNMFCmd(a *app) *cobra.Command {
	f := &nmfFlags{}
	cmd := &cobra.Command{
		Use:   "nmf",
		Short: "Mini-batch NMF by DP-MBCD against DP-SGD and the non-private baselines (Chen & Liu, Table 2)",
		Long: `Factorise the synthetic low-rank matrix M (rows × cols of rank r, one row per example) as
X Y with X, Y ≥ 0: X's rows are hidden, Y is released (Chen & Liu, "Hidden State Differential
Private Mini-Batch Block Coordinate Descent", Algorithm 3, with the nonnegativity projection
it omits; see package models/nmf). Batches are a shuffle-once partition visited cyclically; every Y
step's record is fed to the mbcd (paper) and mbcd-certified accountants.

Noise: dp-mbcd's σ is bisected so that the paper's hidden-state RDP (mbcd) at order --alpha
equals --rdp (Table 2 reports "ε = 0.42" with no δ, read here as RDP at α = 2);
dp-mbcd-certified's so that mbcd-certified's does, with the hidden rows restarted from their
public initial values at every visit (the certified bound needs a Y step that depends only on
Y and the batch; with rows carried across visits, as dp-mbcd and dp-sgd do, it is not printed).
dp-sgd's σ gives the same RDP by composition: in a shuffle-once epoch an example is in one
batch, so an epoch costs one replace-one Gaussian release (RDP 2α/σ²) and K epochs compose to
2αK/σ². No sampled-Gaussian (amplification) analysis covers shuffle-once batches, so none is
used. mbcd and sgd are the same updates with σ = 0 and no clipping.

The metric is the relative error ‖XY − M‖_F/‖M‖_F (mean ± std over --seeds runs); it reads the
hidden X and M and is for the operator only. The noise is seeded (--noise-seed) for
reproducibility unless --noise-seed is -1: a seeded run is not private.`,
		Example: `  dptrain nmf --batch 50,100,200 --epochs 200 --seeds 3`,
		Args:    cobra.NoArgs,
		RunE:    func(cmd *cobra.Command, args []string) error { return runNMF(cmd, f) },
	}
	fl := cmd.Flags()
	fl.IntSliceVar(&f.batches, "batch", []int{50, 100, 200}, "batch sizes b (each must divide the rows)")
	fl.StringSliceVar(&f.methods, "methods", []string{"dp-mbcd", "dp-mbcd-certified", "dp-sgd", "mbcd", "sgd"}, "methods: dp-mbcd, dp-mbcd-certified, dp-sgd, mbcd, sgd")
	fl.IntVar(&f.epochs, "epochs", 200, "epochs K (passes over the partition)")
	fl.IntVar(&f.seeds, "seeds", 3, "runs per cell (seeds 1..n of the partition, the initialisation and the noise)")
	fl.IntVar(&f.inner, "inner", 5, "projected gradient steps on the hidden X rows per visit (dp-mbcd, mbcd)")
	fl.IntVar(&f.rows, "rows", data.DefaultLowRank.Rows, "rows of M (examples)")
	fl.IntVar(&f.cols, "cols", data.DefaultLowRank.Cols, "columns of M")
	fl.IntVar(&f.rank, "rank", data.DefaultLowRank.Rank, "rank of M and of the factorisation")
	fl.Float64Var(&f.eta, "eta", 1, "step size η (capped by κ/ρ² for Y, κ/‖YYᵀ‖ for the X rows)")
	fl.Float64Var(&f.kappa, "kappa", 1.1, "κ of the Hessian-normalised step (the paper's 1.1)")
	fl.Float64Var(&f.rowNorm, "row-norm", 3, "ρ: the hidden X rows are kept in the ρ-ball, Y's smoothness β = ρ²")
	fl.Float64Var(&f.clip, "clip", 0.5, "per-example clip C of Y's row gradients (S_g = 2C: the paper's S_g = 1)")
	fl.Float64Var(&f.target, "rdp", 0.42, "target RDP at order --alpha of the private runs")
	fl.Float64Var(&f.alpha, "alpha", 2, "Rényi order of the target")
	fl.Float64Var(&f.delta, "delta", 1e-5, "δ of the (ε, δ) also printed")
	fl.Uint64Var(&f.dataSeed, "data-seed", 0, "seed of the synthetic matrix")
	fl.Int64Var(&f.noiseSeed, "noise-seed", 0, "base seed of the noise (run s uses base+s); -1: crypto/rand (private)")
	return cmd
}

// nmfCell is one (method, b) row of the table.
type nmfCell struct {
	method     string
	b          int
	sigma      float64
	errs       []float64
	guarantees []string
	seconds    float64
}

func runNMF(cmd *cobra.Command, f *nmfFlags) error {
	if f.epochs <= 0 || f.seeds <= 0 {
		return errors.New("--epochs and --seeds must be positive")
	}
	if !(f.target > 0) || !(f.alpha > 1) || math.IsInf(f.alpha, 1) {
		return fmt.Errorf("--rdp %v and --alpha %v: want a positive target at a finite order > 1", f.target, f.alpha)
	}
	for _, m := range f.methods {
		if _, ok := nmfMethods[m]; !ok {
			return fmt.Errorf("--methods: unknown %q: want dp-mbcd, dp-mbcd-certified, dp-sgd, mbcd or sgd", m)
		}
	}
	ds, _, err := data.NewLowRank(data.LowRankConfig{Rows: f.rows, Cols: f.cols, Rank: f.rank, Noise: data.DefaultLowRank.Noise, Seed: f.dataSeed})
	if err != nil {
		return err
	}
	out := cmd.OutOrStdout()
	fmt.Fprintf(out, "NMF of %s (%d×%d, rank %d), K = %d epochs, η = %g, κ = %g, ρ = %g, C = %g, %d inner X steps, target RDP(α=%g) = %g\n",
		ds.Source, f.rows, f.cols, f.rank, f.epochs, f.eta, f.kappa, f.rowNorm, f.clip, f.inner, f.alpha, f.target)
	if f.noiseSeed >= 0 {
		fmt.Fprintln(out, "seeded noise: reproducible, not private (use --noise-seed -1 for a release)")
	}
	var cells []nmfCell
	for _, b := range f.batches {
		if b <= 0 || f.rows%b != 0 {
			return fmt.Errorf("--batch %d must divide the %d rows (shuffle-once partition of equal batches)", b, f.rows)
		}
		for _, name := range f.methods {
			c, err := runNMFCell(f, ds.Train.X, name, b)
			if err != nil {
				return fmt.Errorf("%s b=%d: %w", name, b, err)
			}
			cells = append(cells, c)
		}
	}
	tw := tabwriter.NewWriter(out, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "method\tb\tσ\trel. error (mean ± std)\tprivacy of Y (each accountant, its label)\ts/run")
	for _, c := range cells {
		mean, std := stat.MeanStdDev(c.errs, nil)
		if len(c.errs) < 2 {
			std = 0
		}
		fmt.Fprintf(tw, "%s\t%d\t%.4g\t%.4f ± %.4f\t%s\t%.1f\n", c.method, c.b, c.sigma, mean, std, strings.Join(c.guarantees, "; "), c.seconds)
	}
	return tw.Flush()
}

// nmfConfig is the model configuration of method name.
func nmfConfig(f *nmfFlags, name string) nmf.Config {
	m := nmfMethods[name]
	cfg := nmf.Config{Rank: f.rank, Eta: f.eta, Kappa: f.kappa, RowNorm: f.rowNorm, Clip: f.clip, InnerSteps: f.inner, Joint: m.joint, Recompute: m.certified}
	if !m.private {
		cfg.Clip = math.Inf(1)
	}
	return cfg
}

// nmfAccountants returns fresh mbcd and mbcd-certified accountants of md's run.
func nmfAccountants(md *nmf.Model) ([]*mbcd.Accountant, error) {
	p, err := mbcd.New(md.Run())
	if err != nil {
		return nil, err
	}
	c, err := mbcd.NewCertified(md.Run())
	if err != nil {
		return nil, err
	}
	return []*mbcd.Accountant{p, c}, nil
}

// declaredRDP composes the records of K epochs of b-row batches into the paper's accountant
// (certified: mbcd-certified) and returns its RDP at alpha.
func declaredRDP(md *nmf.Model, b, epochs int, alpha float64, certified bool) (float64, error) {
	accs, err := nmfAccountants(md)
	if err != nil {
		return 0, err
	}
	k := 0
	if certified {
		k = 1
	}
	per := md.Run().DatasetSize / b
	for range epochs {
		for j := range per {
			if err := accs[k].Compose(md.Declare(b, j)); err != nil {
				return 0, err
			}
		}
	}
	return accs[k].RDP(alpha)
}

// calibrateMBCD bisects σ (on log σ) so that the paper's RDP at alpha is at most target,
// rounding against privacy: the returned σ's RDP is ≤ target.
func calibrateMBCD(md *nmf.Model, b, epochs int, alpha, target float64, certified bool) (float64, error) {
	rdpAt := func(s float64) (float64, error) {
		if err := md.SetNoiseMultiplier(s); err != nil {
			return 0, err
		}
		return declaredRDP(md, b, epochs, alpha, certified)
	}
	lo, hi := 1e-3, 1e4
	if v, err := rdpAt(hi); err != nil || v > target {
		return 0, fmt.Errorf("no σ ≤ %g reaches RDP %g (err %v)", hi, target, err)
	}
	for range 60 {
		mid := math.Sqrt(lo * hi)
		v, err := rdpAt(mid)
		if err != nil {
			return 0, err
		}
		if v > target {
			lo = mid
		} else {
			hi = mid
		}
	}
	return hi, md.SetNoiseMultiplier(hi)
}

func runNMFCell(f *nmfFlags, m []float32, name string, b int) (nmfCell, error) {
	cell := nmfCell{method: name, b: b}
	meth := nmfMethods[name]
	cfg := nmfConfig(f, name)
	n := f.rows
	per := n / b
	start := time.Now()
	for s := 1; s <= f.seeds; s++ {
		rng := rand.New(rand.NewPCG(uint64(s), 0x6e6d66))
		md, err := nmf.New(cfg, m, n, f.cols, rng)
		if err != nil {
			return cell, err
		}
		if meth.private {
			if meth.joint { // composition: K epochs of one replace-one Gaussian each, 2αK/σ² = target
				cell.sigma = math.Sqrt(2 * f.alpha * float64(f.epochs) / f.target)
				cell.sigma = math.Nextafter(cell.sigma, math.Inf(1))
			} else if s == 1 {
				if cell.sigma, err = calibrateMBCD(md, b, f.epochs, f.alpha, f.target, meth.certified); err != nil {
					return cell, err
				}
			}
			if err := md.SetNoiseMultiplier(cell.sigma); err != nil {
				return cell, err
			}
		}
		var noise *optim.Noise
		if f.noiseSeed >= 0 {
			noise = optim.NewSeededNoise(uint64(f.noiseSeed) + uint64(s))
		} else if noise, err = optim.NewNoise(); err != nil {
			return cell, err
		}
		var accs []*mbcd.Accountant
		if meth.private {
			if accs, err = nmfAccountants(md); err != nil {
				return cell, err
			}
		}
		perm := rng.Perm(n) // shuffle once, visit cyclically
		for range f.epochs {
			for j := range per {
				rec, err := md.Step(perm[j*b:(j+1)*b], j, noise)
				if err != nil {
					return cell, err
				}
				for _, a := range accs {
					if err := a.Compose(rec); err != nil {
						return cell, err
					}
				}
			}
		}
		_, rel := md.Objective()
		cell.errs = append(cell.errs, rel)
		if s == 1 {
			if cell.guarantees, err = nmfGuarantees(f, accs, meth.certified, cell.sigma); err != nil {
				return cell, err
			}
		}
	}
	cell.seconds = time.Since(start).Seconds() / float64(f.seeds)
	return cell, nil
}

// nmfGuarantees formats RDP(α) and ε(δ) of every accountant that covers the run, with labels.
func nmfGuarantees(f *nmfFlags, accs []*mbcd.Accountant, recompute bool, sigma float64) ([]string, error) {
	if accs == nil {
		return []string{"none (σ = 0: not private)"}, nil
	}
	var out []string
	for _, a := range accs {
		if a.Label() == accounting.Certified && !recompute {
			out = append(out, a.Name()+": not covered (hidden rows carried across visits)")
			continue
		}
		r, err := a.RDP(f.alpha)
		if err != nil {
			return nil, err
		}
		g, err := a.Epsilon(f.delta)
		if err != nil {
			return nil, err
		}
		out = append(out, fmt.Sprintf("%s [%s] RDP(%g) %.4g, ε %.4g", a.Name(), a.Label(), f.alpha, roundUp(r), g.Epsilon))
	}
	{
		// Composition (rdp accountant), which needs no hidden-state assumption and so covers
		// carried hidden rows too: given the released past, a step whose batch does not hold
		// the differing row has the same law on both datasets, so each shuffle-once epoch
		// costs one replace-one Gaussian release.
		acc, err := rdp.New(accounting.Run{DatasetSize: f.rows})
		if err != nil {
			return nil, err
		}
		if err := acc.Compose(accounting.Step{Mechanism: accounting.Gaussian, Sampling: accounting.FullBatch,
			Neighbouring: accounting.ReplaceOne, NoiseMultiplier: sigma, SampleRate: 1, Count: f.epochs}); err != nil {
			return nil, err
		}
		g, err := acc.Epsilon(f.delta)
		if err != nil {
			return nil, err
		}
		out = append(out, fmt.Sprintf("composition [%s] RDP(%g) %.4g, ε %.4g", g.Label, f.alpha, roundUp(2*f.alpha*float64(f.epochs)/(sigma*sigma)), roundUp(g.Epsilon)))
	}
	return out, nil
}

// roundUp rounds a privacy loss up in its fourth significant digit (against privacy).
func roundUp(v float64) float64 {
	if v <= 0 || math.IsInf(v, 0) || math.IsNaN(v) {
		return v
	}
	p := math.Pow(10, 3-math.Floor(math.Log10(v)))
	return math.Ceil(v*p) / p
}
