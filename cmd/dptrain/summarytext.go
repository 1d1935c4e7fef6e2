package main

import (
	"fmt"
	"io"
	"text/tabwriter"

	"github.com/dptrain/dptrain/accounting"
	"github.com/dptrain/dptrain/train"
	"github.com/dptrain/dptrain/train/rundir"
)

// writeSummaryText writes the summary s as "dptrain train" prints it: the run, its test accuracy, the
// ε of every accountant with its label (and the certified ε beside them when no certified
// accountant was asked for), the privacy ledger, the timing, and whether the run's artefacts
// may be published: held back until the run's planned end, not private for a seeded run, or
// the line saying what may be published.
func writeSummaryText(out io.Writer, s *train.Summary) error {
	fmt.Fprintf(out, "%s: %s on %s, %s\n", s.Name, s.Algorithm, s.Dataset, s.Model)
	// σ is printed rounded up: a run configured from the printed value has at least this noise.
	// DP-SGLD clips nothing: its sensitivity is the loss's Lipschitz constant L.
	bound := fmt.Sprintf("C = %g", s.ClipNorm)
	if s.ClipNorm == 0 && s.Lipschitz > 0 {
		bound = fmt.Sprintf("L = %g", s.Lipschitz)
	}
	fmt.Fprintf(out, "test accuracy %.4f (loss %.4f) after %d/%d steps (%.2f epochs, q = %.5g, σ = %s, %s)\n",
		s.TestAccuracy, s.TestLoss, s.Steps, s.PlannedSteps, s.Epochs, s.SampleRate, train.FormatUp(s.NoiseMultiplier, 5), bound)
	if s.StoppedEarly != "" {
		fmt.Fprintln(out, s.StoppedEarly)
	}
	for _, c := range s.ChangedOnResume {
		fmt.Fprintf(out, "changed on resume (--allow-changes): %s\n", c)
	}
	if len(s.Epsilon) > 0 {
		tw := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
		fmt.Fprintf(tw, "accountant\tε\tδ\tlabel\n")
		for _, e := range s.Epsilon {
			if e.Error != "" {
				fmt.Fprintf(tw, "%s\tn/a\t%g\t\t(%s)\n", e.Mode, e.Delta, e.Error)
				continue
			}
			fmt.Fprintf(tw, "%s\t%.4f\t%g\t%s\n", e.Mode, e.Epsilon, e.Delta, e.Label)
		}
		if c := s.CertifiedEpsilon; c != nil {
			fmt.Fprintf(tw, "%s\t%.4f\t%g\t%s\t(not in privacy.accountants: the certified ε of the same run, beside the bounds above)\n", c.Mode, c.Epsilon, c.Delta, c.Label)
		}
		tw.Flush()
		if s.TargetBound != "" {
			fmt.Fprintln(out, s.TargetBound)
		}
		fmt.Fprintf(out, "privacy ledger: %d private steps executed on this data (private/%s)\n", s.LedgerSteps, rundir.LedgerFile)
		if s.Rewind != "" {
			fmt.Fprintf(out, "REWIND: %s\n", s.Rewind)
		}
		fmt.Fprintf(out, "declared public: n = %d training examples\n", s.DatasetSize)
	} else {
		fmt.Fprintln(out, "non-private run: no privacy guarantee")
	}
	if s.NotPrivate != "" {
		fmt.Fprintf(out, "NOT PRIVATE: %s\n", s.NotPrivate)
	}
	perStep := fmt.Sprintf("%.1f ms/step", s.MsPerStep)
	if s.MsPerStep == 0 {
		// A finished run resumed, or a run stopped before its first step: no step to time.
		perStep = "no step ran in this session"
	}
	fmt.Fprintf(out, "%.1f s, %s (blas %s; timing is operator only: private/%s); model: %s\n", s.WallSec, perStep, s.BLAS, rundir.TimingFile, s.ModelFile)
	switch {
	case len(s.Epsilon) == 0:
	case s.Held != "":
		fmt.Fprintf(out, "NOT YET FOR RELEASE: %s\n", s.Held)
	case s.NotPrivate != "":
		fmt.Fprintf(out, "not for release: the model, summary and config of a seeded run are not private (the seed is in %s)\n", rundir.PrivatePath(s.OutputDir, rundir.SeedFile))
	case !certified(s):
		fmt.Fprintf(out, "not certified: no accountant certifies this run's ε (its bounds are labelled paper or approximate: the theorem's assumptions are not all checked), so nothing is called safe to publish; add a certified accountant that covers the run to privacy.accountants (docs/accounting.md lists them)\n")
	default:
		fmt.Fprintln(out, rundir.PublishLine(s.OutputDir))
	}
	return nil
}

// certified reports whether the run of s has a certified ε: from one of its accountants, or
// computed beside them (CertifiedEpsilon).
func certified(s *train.Summary) bool {
	for _, e := range s.Epsilon {
		if e.Error == "" && e.Label == accounting.Certified {
			return true
		}
	}
	return s.CertifiedEpsilon != nil && s.CertifiedEpsilon.Error == "" && s.CertifiedEpsilon.Label == accounting.Certified
}
