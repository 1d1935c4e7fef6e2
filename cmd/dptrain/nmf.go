package main

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/dptrain/dptrain/cmd/dptrain/internal/nmfrun"
	"github.com/dptrain/dptrain/data"
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

func newNMFCmd(a *app) *cobra.Command {
	f := &nmfFlags{}
	cmd := &cobra.Command{
		Use:   "nmf",
		Short: "Mini-batch NMF by DP-MBCD against DP-SGD and the non-private baselines (Chen & Liu, Table 2)",
		Long: `Factorise the synthetic low-rank matrix M (rows × cols of rank r, one row per example) as
X Y with X, Y ≥ 0: X's rows are hidden, Y is released (Chen & Liu, "Hidden State Differential
Private Mini-Batch Block Coordinate Descent", Algorithm 3, with the nonnegativity projection
it omits; see package algorithm/dpmbcd/nmf). Batches are a shuffle-once partition visited cyclically; every Y
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
	fl.StringSliceVar(&f.methods, "methods", nmfrun.Methods, "methods: dp-mbcd, dp-mbcd-certified, dp-sgd, mbcd, sgd")
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

func runNMF(cmd *cobra.Command, f *nmfFlags) error {
	set := nmfrun.Settings{
		Rows: f.rows, Cols: f.cols, Rank: f.rank, Epochs: f.epochs, Seeds: f.seeds, Inner: f.inner,
		Eta: f.eta, Kappa: f.kappa, RowNorm: f.rowNorm, Clip: f.clip,
		Target: f.target, Alpha: f.alpha, Delta: f.delta, NoiseSeed: f.noiseSeed,
	}
	if err := set.Check(f.methods); err != nil {
		return err
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
	cells, err := nmfrun.Run(set, ds.Train.X, f.methods, f.batches)
	if err != nil {
		return err
	}
	return nmfrun.WriteTable(out, cells)
}
