package auditreport

import (
	"encoding/json"
	"fmt"
	"io"
	"path/filepath"
	"slices"
	"strings"
	"text/tabwriter"

	"github.com/dptrain/dptrain/data"
	"github.com/dptrain/dptrain/train"
	"github.com/dptrain/dptrain/train/audit"
	"github.com/dptrain/dptrain/train/config"
	"github.com/dptrain/dptrain/train/rundir"
)

// File is the audit report written into the audit run's output directory.
const File = "audit.json"

// Isolate gives the audit a run of its own: unless the --set overrides name output.dir, the
// config's output directory gets the suffix "-audit", so that an audit (which trains with
// canaries) never writes into the config's training run.
func Isolate(cfg *config.Config, sets []string) {
	if !slices.ContainsFunc(sets, func(s string) bool { return strings.HasPrefix(s, "output.dir=") }) {
		cfg.Output.Dir += "-audit"
	}
}

// Save writes the report as indented JSON into dir's File, atomically.
func Save(dir string, r *audit.Report) error {
	return data.WriteFileAtomic(filepath.Join(dir, File), func(w io.Writer) error {
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		return enc.Encode(r)
	})
}

// WriteText writes the report as "dptrain audit" prints it: the run, the audit's canaries and
// guesses, ε_lower, each accountant's ε with its verdict (REFUTED when below ε_lower), a
// warning for a seeded run, and where the report and the run's private files are.
func WriteText(out io.Writer, r *audit.Report) error {
	s := r.Summary
	// An algorithm that clips nothing (DP-SGLD) bounds a gradient by its Lipschitz constant L.
	bound := fmt.Sprintf("C = %.4g", s.ClipNorm)
	if s.ClipNorm == 0 && s.Lipschitz > 0 {
		bound = fmt.Sprintf("L = %.4g", s.Lipschitz)
	}
	fmt.Fprintf(out, "%s: %s on %s, %s; %d/%d steps, q = %.5g, σ = %s, %s, test accuracy %.4f\n",
		s.Name, s.Algorithm, s.Dataset, s.Model, s.Steps, s.PlannedSteps, s.SampleRate, train.FormatUp(s.NoiseMultiplier, 5), bound, s.TestAccuracy)
	b := r.Bound
	fmt.Fprintf(out, "audit (%s, %s neighbours): %d canaries, %d included", r.Threat, r.Adjacency, r.Canaries, r.Included)
	if r.Support > 0 {
		fmt.Fprintf(out, ", gradient canaries on %d coordinate(s) each", r.Support)
	}
	fmt.Fprintf(out, "\nε_lower = %.4f at %g%% confidence (δ = %g): %d of %d guesses correct (k₊ = %d, k₋ = %d; confidence split over %d guess counts)\n",
		b.Epsilon, 100*b.Confidence, b.Delta, b.Best.Correct, b.Best.Made(), b.Best.Plus, b.Best.Minus, b.Bonferroni)
	if len(r.Modes) == 0 {
		fmt.Fprintln(out, "non-private run: no accountant to hold to the bound")
	} else {
		tw := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
		fmt.Fprintf(tw, "accountant\tε\tlabel\tverdict\n")
		for _, v := range r.Modes {
			if v.Error != "" {
				fmt.Fprintf(tw, "%s\tn/a\t\t%s (%s)\n", v.Mode, v.Verdict, v.Error)
				continue
			}
			fmt.Fprintf(tw, "%s\t%.4f\t%s\t%s\n", v.Mode, v.Epsilon, v.Label, v.Verdict)
		}
		tw.Flush()
	}
	fmt.Fprintln(out, "an audit can only refute a bound, never certify one")
	if s.Reproducible {
		fmt.Fprintln(out, "WARNING: a seed was set; the canaries and the noise are reproducible: this run is not for release")
	}
	fmt.Fprintf(out, "%.1f s; report: %s; the run's checkpoints and metrics (operator only, not covered by the guarantee): %s\n",
		s.WallSec, filepath.Join(s.OutputDir, File), rundir.PrivatePath(s.OutputDir)+string(filepath.Separator))
	return nil
}
