package compare

import (
	"errors"
	"fmt"
	"io"
	"slices"
	"sort"
	"strconv"
	"text/tabwriter"

	"github.com/dptrain/dptrain/accounting"
)

// Described is a training run as "dptrain account compare" is told it: the mechanism of its
// steps, its declaration, the number of steps, δ, the steps at which ε is also reported and a
// DP-MBCD block schedule. Its errors name each parameter by the flag of that command that sets
// it (--steps for Steps, and so on).
type Described struct {
	Mechanism, Sampling, Neighbouring, Convexity, UpdateRule string

	SampleRate, NoiseMultiplier, ClipNorm, StepSize, Delta        float64
	Lipschitz, Smoothness, StrongConvexity, Holder, Diameter      float64
	MixWidth                                                      float64
	ProxLipschitz, GradientLipschitz, InitialLSIInverse           float64
	Steps, DatasetSize, BatchSize, MinBatchSize, LinfParts, Block int
	LastIterateOnly                                               bool

	// At are further steps at which ε is reported.
	At []int
	// Blocks and BlockEpochs describe a DP-MBCD schedule: block (Block+i) mod Blocks is
	// updated during the i-th run of BlockEpochs epochs.
	Blocks, BlockEpochs int
	// Plot adds PlotPoints (at least 2) evenly spread steps to the checkpoints, for a plot of
	// ε against steps.
	Plot       bool
	PlotPoints int
}

// Run is the run's declaration, as the accountants read it.
func (d *Described) Run() accounting.Run {
	return accounting.Run{
		LastIterateOnly: d.LastIterateOnly,
		UpdateRule:      d.UpdateRule,
		DatasetSize:     d.DatasetSize,
		Convexity:       accounting.Convexity(d.Convexity),
		Lipschitz:       d.Lipschitz,
		Smoothness:      d.Smoothness,
		HolderExponent:  d.Holder,
		StrongConvexity: d.StrongConvexity,
		DomainDiameter:  d.Diameter,

		ProxLipschitz:     d.ProxLipschitz,
		GradientLipschitz: d.GradientLipschitz,
		InitialLSIInverse: d.InitialLSIInverse,
	}
}

// Record is the part of one step's record the description gives, as an algorithm's compare
// section reads and completes it (config.Algorithms.CompareMechanism).
func (d *Described) Record() accounting.Step {
	return accounting.Step{
		Neighbouring: accounting.Neighbouring(d.Neighbouring), NoiseMultiplier: d.NoiseMultiplier,
		Sensitivity: d.ClipNorm, StepSize: d.StepSize, BatchSize: d.BatchSize,
		MixWidth: d.MixWidth, LinfParts: d.LinfParts,
	}
}

// Step returns the record of one step (see Mechanism.Step); BatchIndex is set per chunk.
func (d *Described) Step() (accounting.Step, error) {
	s, err := Mechanism{
		Mechanism:       accounting.Mechanism(d.Mechanism),
		Sampling:        accounting.Sampling(d.Sampling),
		Neighbouring:    accounting.Neighbouring(d.Neighbouring),
		SampleRate:      d.SampleRate,
		NoiseMultiplier: d.NoiseMultiplier,
		ClipNorm:        d.ClipNorm,
		Lipschitz:       d.Lipschitz,
		StepSize:        d.StepSize,
		BatchSize:       d.BatchSize,
		DatasetSize:     d.DatasetSize,
		MinBatchSize:    d.MinBatchSize,
		MixWidth:        d.MixWidth,
		LinfParts:       d.LinfParts,
		Block:           d.Block,
	}.Step()
	if errors.Is(err, ErrNoSampleRate) {
		return s, errors.New("give --sample-rate, or --batch-size and --dataset-size")
	}
	return s, err
}

// Evaluate checks the description and composes the run in every mode (see Evaluate, whose
// Modes, Build and Name the arguments are), with ε evaluated at the final step, at the
// steps of At and, with Plot, at PlotPoints evenly spread steps.
func (d *Described) Evaluate(names []string, build Builder, name func(field string) string) (Report, error) {
	if d.Steps <= 0 {
		return Report{}, fmt.Errorf("--steps %d: give the number of steps K > 0", d.Steps)
	}
	if !(d.Delta > 0 && d.Delta < 1) {
		return Report{}, fmt.Errorf("--delta %v: want 0 < δ < 1", d.Delta)
	}
	if d.Blocks < 1 || d.BlockEpochs < 1 {
		return Report{}, fmt.Errorf("--blocks %d --block-epochs %d: both must be at least 1", d.Blocks, d.BlockEpochs)
	}
	if d.Blocks > 1 && (d.BatchSize <= 0 || d.DatasetSize < d.BatchSize) {
		return Report{}, errors.New("--blocks needs --batch-size and --dataset-size (a block is updated for --block-epochs epochs of n/b steps)")
	}
	points := 0
	if d.Plot {
		if d.PlotPoints < 2 {
			return Report{}, fmt.Errorf("--plot-points %d: want at least 2", d.PlotPoints)
		}
		points = d.PlotPoints
	}
	base, err := d.Step()
	if err != nil {
		return Report{}, err
	}
	return Evaluate(Spec{
		Run: d.Run(), Step: base, Steps: d.Steps, At: d.At, Delta: d.Delta,
		Schedule:    Schedule{Blocks: d.Blocks, Epochs: d.BlockEpochs},
		Checkpoints: Checkpoints(d.Steps, d.At, points),
		Modes:       names, Build: build,
		Name: name,
	})
}

// WriteTable writes the report as the table of "dptrain account compare": a row per
// applicable mode and the best row, with ε at the steps of at inside (0, r.Steps), at the
// final step and the order, then δ and the steps, and the reason of every mode that does not
// apply.
func (r Report) WriteTable(w io.Writer, at []int) error {
	var cols []int
	for _, t := range at {
		if t > 0 && t < r.Steps && !slices.Contains(cols, t) {
			cols = append(cols, t)
		}
	}
	sort.Ints(cols)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintf(tw, "mode\tlabel")
	for _, t := range cols {
		fmt.Fprintf(tw, "\tε@%d", t)
	}
	fmt.Fprintf(tw, "\tε@%d (final)\torder\n", r.Steps)
	rows := r.Modes
	if r.Best != nil {
		rows = append(append([]Row(nil), rows...), *r.Best)
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
		for _, t := range cols {
			fmt.Fprintf(tw, "\t%s", epsAt(row.Curve, t))
		}
		fmt.Fprintf(tw, "\t%.6g\t%s\n", row.Epsilon, orderString(row.Order))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	fmt.Fprintf(w, "δ = %g, %d steps\n", r.Delta, r.Steps)
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

// epsAt formats ε at step t of a curve, "-" where it was not evaluated.
func epsAt(curve []Point, t int) string {
	for _, p := range curve {
		if p.Steps == t {
			return strconv.FormatFloat(p.Epsilon, 'g', 6, 64)
		}
	}
	return "-"
}

// orderString formats a Rényi order, "-" for none.
func orderString(a float64) string {
	if a == 0 {
		return "-"
	}
	return strconv.FormatFloat(a, 'g', 4, 64)
}
