package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"sort"
	"strconv"
	"text/tabwriter"

	"github.com/dptrain/dptrain/accounting"
	"github.com/dptrain/dptrain/accounting/compare"
	"github.com/dptrain/dptrain/accounting/modes"
	"github.com/dptrain/dptrain/data"
	"github.com/dptrain/dptrain/internal/plot"
	"github.com/dptrain/dptrain/train"
	"github.com/spf13/cobra"
)

func init() { accountSubcommands = append(accountSubcommands, newAccountCompareCmd) }

// compareModes lists the modes compare runs and builds them.
var compareModes = struct {
	names func() []string
	build func(name string, run accounting.Run) (accounting.Accountant, error)
}{modes.Names, modes.New}

// compareOptions are the flags of "dptrain account compare".
type compareOptions struct {
	config string

	mechanism, sampling, neighbouring, convexity, updateRule string

	sampleRate, noiseMultiplier, clipNorm, stepSize, delta        float64
	lipschitz, smoothness, strongConvexity, holder, diameter      float64
	mixWidth                                                      float64
	proxLipschitz, gradientLipschitz, initialLSIInverse           float64
	steps, datasetSize, batchSize, minBatchSize, linfParts, block int
	lastIterateOnly                                               bool

	at        []int
	plotFile  string
	plotTitle string
	// blocks and blockEpochs describe a DP-MBCD schedule: block (block+i) mod blocks is
	// updated during the i-th run of blockEpochs epochs.
	blocks, blockEpochs int
	plotPoints          int
	json                bool
}

func newAccountCompareCmd(a *app) *cobra.Command {
	o := &compareOptions{}
	cmd := &cobra.Command{
		Use:   "compare",
		Short: "Run every accounting mode whose assumptions hold on one mechanism and compare ε",
		Long: `compare describes one training run by its mechanism (explicit flags, or --config FILE for a
training config, flags overriding it), builds every accounting mode, composes the run's steps in
each mode whose assumptions hold, and prints ε per mode at the final step and at --at steps. Modes
whose assumptions fail are listed with the reason. "best" is the smallest ε over applicable
certified modes.

Step records follow accounting.Step: the noise multiplier is the noise std on the summed
gradient divided by the clip norm; hidden-state modes need --last-iterate-only, --update-rule sgd
and --neighbouring replace-one, and their loss constants (--lipschitz, --smoothness,
--strong-convexity, --diameter, --convexity).`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if o.config != "" {
				if err := loadCompareConfig(o.config, o, cmd); err != nil {
					return err
				}
			}
			if w := (&mechanismFlags{delta: o.delta, datasetSize: o.datasetSize, batch: o.batchSize, sampleRate: o.sampleRate}).deltaWarning(); w != "" {
				a.log.Warn(w)
			}
			return runCompare(a.out, o)
		},
	}
	f := cmd.Flags()
	f.StringVar(&o.config, "config", "", "training config (YAML) to read the mechanism from; explicit flags override it")
	f.StringVar(&o.mechanism, "mechanism", string(accounting.Gaussian), "mechanism of every step: gaussian or sampled-with-rejection-gaussian")
	f.StringVar(&o.sampling, "sampling", string(accounting.Poisson), "sampling: poisson, without-replacement, shuffled, shuffled-once, full, poisson-with-rejection")
	f.StringVar(&o.neighbouring, "neighbouring", string(accounting.AddRemove), "neighbouring relation: add-remove or replace-one")
	f.Float64Var(&o.sampleRate, "sample-rate", 0, "sample rate q (default batch-size/dataset-size; 1 for full batch)")
	f.Float64Var(&o.noiseMultiplier, "noise-multiplier", 0, "noise multiplier z: noise std on the summed gradient / clip norm")
	f.Float64Var(&o.clipNorm, "clip-norm", 0, "per-example clip norm C (default --lipschitz, else 1)")
	f.IntVar(&o.steps, "steps", 0, "number of steps K")
	f.Float64Var(&o.delta, "delta", 1e-5, "δ")
	f.IntVar(&o.datasetSize, "dataset-size", 0, "dataset size n")
	f.IntVar(&o.batchSize, "batch-size", 0, "batch size b (expected size under Poisson)")
	f.Float64Var(&o.stepSize, "step-size", 0, "step size η (constant)")
	f.Float64Var(&o.lipschitz, "lipschitz", 0, "Lipschitz constant L of the per-example loss (gradient-norm bound)")
	f.Float64Var(&o.smoothness, "smoothness", 0, "smoothness β (Hölder constant if --holder-exponent < 1)")
	f.Float64Var(&o.strongConvexity, "strong-convexity", 0, "strong convexity λ")
	f.Float64Var(&o.holder, "holder-exponent", 0, "Hölder exponent of the gradient in (0, 1]; 1 or 0 means smooth")
	f.Float64Var(&o.diameter, "diameter", 0, "diameter of the projection domain (0: no projection)")
	f.StringVar(&o.convexity, "convexity", string(accounting.NonConvex), "loss class: non-convex, convex, strongly-convex")
	f.StringVar(&o.updateRule, "update-rule", "sgd", "update rule: sgd, momentum, adam")
	f.BoolVar(&o.lastIterateOnly, "last-iterate-only", false, "only the final model is released (hidden-state modes need it)")
	f.IntVar(&o.minBatchSize, "min-batch-size", 0, "DP-ULR's rejection threshold N_B")
	f.Float64Var(&o.mixWidth, "mix-width", 0, "ModelMix's mixing width, in the units of the noise std")
	f.IntVar(&o.linfParts, "linf-parts", 0, "ModelMix's l2+l∞ clipping parts p")
	f.Float64Var(&o.proxLipschitz, "prox-lipschitz", 0, "DP-MBCD: Lipschitz constant L_T of the prox (0: 1)")
	f.Float64Var(&o.gradientLipschitz, "gradient-lipschitz", 0, "DP-MBCD (paper mode): L_F of every step's gradient map (0: from --smoothness)")
	f.Float64Var(&o.initialLSIInverse, "initial-lsi-inverse", 0, "DP-MBCD: 1/c_0 of the initialisation (0: data-independent point mass; s0² for N(0, s0²I))")
	f.IntVar(&o.block, "block", 0, "DP-MBCD block index of every step (with --blocks: of the first block)")
	f.IntVar(&o.blocks, "blocks", 1, "DP-MBCD schedule: number of blocks updated in turn")
	f.IntVar(&o.blockEpochs, "block-epochs", 1, "DP-MBCD schedule: epochs (n/b steps) spent on a block before moving to the next")
	f.IntSliceVar(&o.at, "at", nil, "also report ε after these steps (comma separated)")
	f.StringVar(&o.plotFile, "plot", "", "write a PNG of ε against steps, one curve per applicable mode")
	f.IntVar(&o.plotPoints, "plot-points", 60, "number of steps at which the plot evaluates ε")
	f.StringVar(&o.plotTitle, "plot-title", "", "title of the --plot figure (default: ε (δ = …) against steps)")
	f.BoolVar(&o.json, "json", false, "print one JSON object instead of a table")
	return cmd
}

// loadCompareConfig fills the options from a training config; flags the user set explicitly
// keep their values.
func loadCompareConfig(path string, o *compareOptions, cmd *cobra.Command) error {
	cfg, err := train.LoadConfig(path, nil)
	if err != nil {
		return err
	}
	set := func(name string) bool { return cmd.Flags().Changed(name) }
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
	fill("dataset-size", func() { o.datasetSize = n })
	fill("batch-size", func() { o.batchSize = op.BatchSize })
	fill("sampling", func() { o.sampling = op.Sampling })
	fill("min-batch-size", func() { o.minBatchSize = op.MinBatchSize })
	fill("noise-multiplier", func() { o.noiseMultiplier = op.NoiseMultiplier.Value })
	fill("clip-norm", func() { o.clipNorm = op.ClipNorm })
	fill("step-size", func() { o.stepSize = op.LearningRate })
	fill("update-rule", func() { o.updateRule = op.Update })
	fill("delta", func() { o.delta = cfg.Privacy.Delta })
	fill("steps", func() {
		o.steps = cfg.Training.Steps
		if o.steps == 0 && op.BatchSize > 0 {
			o.steps = int(math.Ceil(cfg.Training.Epochs * float64(n) / float64(op.BatchSize)))
		}
	})
	// The algorithm's own part: its constants, as its registration declares them.
	run, step, err := train.Builtin().CompareMechanism(cfg, o.run(), o.record())
	if err != nil {
		return fmt.Errorf("config %s: %w", path, err)
	}
	fill("last-iterate-only", func() { o.lastIterateOnly = run.LastIterateOnly })
	fill("update-rule", func() { o.updateRule = run.UpdateRule })
	fill("convexity", func() { o.convexity = string(run.Convexity) })
	fill("lipschitz", func() { o.lipschitz = run.Lipschitz })
	fill("smoothness", func() { o.smoothness = run.Smoothness })
	fill("strong-convexity", func() { o.strongConvexity = run.StrongConvexity })
	fill("diameter", func() { o.diameter = run.DomainDiameter })
	fill("holder-exponent", func() { o.holder = run.HolderExponent })
	fill("prox-lipschitz", func() { o.proxLipschitz = run.ProxLipschitz })
	fill("gradient-lipschitz", func() { o.gradientLipschitz = run.GradientLipschitz })
	fill("initial-lsi-inverse", func() { o.initialLSIInverse = run.InitialLSIInverse })
	fill("neighbouring", func() { o.neighbouring = string(step.Neighbouring) })
	fill("clip-norm", func() { o.clipNorm = step.Sensitivity })
	fill("noise-multiplier", func() { o.noiseMultiplier = step.NoiseMultiplier })
	fill("linf-parts", func() { o.linfParts = step.LinfParts })
	fill("mix-width", func() { o.mixWidth = step.MixWidth })
	if o.stepSize == 0 {
		o.stepSize = step.StepSize
	}
	return nil
}

// record is the part of one step's record the options give, as an algorithm's compare
// section reads and completes it.
func (o *compareOptions) record() accounting.Step {
	return accounting.Step{
		Neighbouring: accounting.Neighbouring(o.neighbouring), NoiseMultiplier: o.noiseMultiplier,
		Sensitivity: o.clipNorm, StepSize: o.stepSize, BatchSize: o.batchSize,
		MixWidth: o.mixWidth, LinfParts: o.linfParts,
	}
}

// compareRow, comparePoint and compareReport are the JSON shapes of --json.
type (
	compareRow    = compare.Row
	comparePoint  = compare.Point
	compareReport = compare.Report
)

func (o *compareOptions) run() accounting.Run {
	return accounting.Run{
		LastIterateOnly: o.lastIterateOnly,
		UpdateRule:      o.updateRule,
		DatasetSize:     o.datasetSize,
		Convexity:       accounting.Convexity(o.convexity),
		Lipschitz:       o.lipschitz,
		Smoothness:      o.smoothness,
		HolderExponent:  o.holder,
		StrongConvexity: o.strongConvexity,
		DomainDiameter:  o.diameter,

		ProxLipschitz:     o.proxLipschitz,
		GradientLipschitz: o.gradientLipschitz,
		InitialLSIInverse: o.initialLSIInverse,
	}
}

// step returns the record of one step; BatchIndex is set per chunk.
func (o *compareOptions) step() (accounting.Step, error) {
	s, err := compare.Mechanism{
		Mechanism:       accounting.Mechanism(o.mechanism),
		Sampling:        accounting.Sampling(o.sampling),
		Neighbouring:    accounting.Neighbouring(o.neighbouring),
		SampleRate:      o.sampleRate,
		NoiseMultiplier: o.noiseMultiplier,
		ClipNorm:        o.clipNorm,
		Lipschitz:       o.lipschitz,
		StepSize:        o.stepSize,
		BatchSize:       o.batchSize,
		DatasetSize:     o.datasetSize,
		MinBatchSize:    o.minBatchSize,
		MixWidth:        o.mixWidth,
		LinfParts:       o.linfParts,
		Block:           o.block,
	}.Step()
	if errors.Is(err, compare.ErrNoSampleRate) {
		return s, errors.New("give --sample-rate, or --batch-size and --dataset-size")
	}
	return s, err
}

// checkpoints returns the sorted distinct steps at which ε is evaluated.
func (o *compareOptions) checkpoints() []int {
	points := 0
	if o.plotFile != "" {
		points = o.plotPoints
	}
	return compare.Checkpoints(o.steps, o.at, points)
}

func runCompare(w io.Writer, o *compareOptions) error {
	if o.steps <= 0 {
		return fmt.Errorf("--steps %d: give the number of steps K > 0", o.steps)
	}
	if !(o.delta > 0 && o.delta < 1) {
		return fmt.Errorf("--delta %v: want 0 < δ < 1", o.delta)
	}
	if o.blocks < 1 || o.blockEpochs < 1 {
		return fmt.Errorf("--blocks %d --block-epochs %d: both must be at least 1", o.blocks, o.blockEpochs)
	}
	if o.blocks > 1 && (o.batchSize <= 0 || o.datasetSize < o.batchSize) {
		return errors.New("--blocks needs --batch-size and --dataset-size (a block is updated for --block-epochs epochs of n/b steps)")
	}
	if o.plotFile != "" && o.plotPoints < 2 {
		return fmt.Errorf("--plot-points %d: want at least 2", o.plotPoints)
	}
	base, err := o.step()
	if err != nil {
		return err
	}
	report, err := compare.Evaluate(compare.Spec{
		Run: o.run(), Step: base, Steps: o.steps, At: o.at, Delta: o.delta,
		Schedule:    compare.Schedule{Blocks: o.blocks, Epochs: o.blockEpochs},
		Checkpoints: o.checkpoints(),
		Modes:       compareModes.names(), Build: compareModes.build,
		Explain: inFlags,
	})
	if err != nil {
		return err
	}
	if o.plotFile != "" {
		if err := plot.Compare(o.plotFile, o.plotTitle, report); err != nil {
			return err
		}
	}
	if o.json {
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		return enc.Encode(report)
	}
	return printCompare(w, o, report)
}

func contains(xs []int, x int) bool {
	for _, y := range xs {
		if y == x {
			return true
		}
	}
	return false
}

func printCompare(w io.Writer, o *compareOptions, r compareReport) error {
	var at []int
	for _, t := range o.at {
		if t > 0 && t < o.steps && !contains(at, t) {
			at = append(at, t)
		}
	}
	sort.Ints(at)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintf(tw, "mode\tlabel")
	for _, t := range at {
		fmt.Fprintf(tw, "\tε@%d", t)
	}
	fmt.Fprintf(tw, "\tε@%d (final)\torder\n", o.steps)
	rows := r.Modes
	if r.Best != nil {
		rows = append(append([]compareRow(nil), rows...), *r.Best)
	}
	for _, row := range rows {
		if !row.Applicable {
			continue
		}
		name := row.Mode
		if row.Source != "" {
			name = "best (" + row.Source + ")"
		}
		fmt.Fprintf(tw, "%s\t%s", name, row.Label)
		for _, t := range at {
			fmt.Fprintf(tw, "\t%s", epsAt(row.Curve, t))
		}
		fmt.Fprintf(tw, "\t%.6g\t%s\n", row.Epsilon, orderString(row.Order))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	fmt.Fprintf(w, "δ = %g, %d steps\n", o.delta, o.steps)
	if r.Best == nil {
		fmt.Fprintln(w, "best: no applicable certified mode")
	}
	first := true
	for _, row := range r.Modes {
		if row.Applicable {
			continue
		}
		if first {
			fmt.Fprintln(w, "not applicable:")
			first = false
		}
		fmt.Fprintf(w, "  %s: %s\n", row.Mode, row.Reason)
	}
	return nil
}

func epsAt(curve []comparePoint, t int) string {
	for _, p := range curve {
		if p.Steps == t {
			return strconv.FormatFloat(p.Epsilon, 'g', 6, 64)
		}
	}
	return "-"
}

func orderString(a float64) string {
	if a == 0 {
		return "-"
	}
	return strconv.FormatFloat(a, 'g', 4, 64)
}
