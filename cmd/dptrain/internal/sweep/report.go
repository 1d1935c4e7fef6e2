package sweep

import (
	"encoding/csv"
	"encoding/json"
	"fmt"
	"io"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/dptrain/dptrain/data"
	"github.com/dptrain/dptrain/train"
)

// Files written by WriteResults into the plan directory.
const (
	ResultsCSV      = "results.csv"
	ResultsJSON     = "results.json"
	ResultsMarkdown = "results.md"
	PlotAccuracy    = "accuracy-vs-epsilon.png"
	PlotEpsilon     = "epsilon-vs-steps.png"
)

// WriteResults writes results.csv (one row per cell and mode), results.json, results.md and
// the plots into dir.
func WriteResults(dir string, r *Results) error {
	writers := []struct {
		name  string
		write func(io.Writer) error
	}{
		{ResultsCSV, r.WriteCSV},
		{ResultsJSON, func(w io.Writer) error {
			enc := json.NewEncoder(w)
			enc.SetIndent("", "  ")
			return enc.Encode(r)
		}},
		{ResultsMarkdown, r.WriteMarkdown},
		{PlotAccuracy, r.PlotAccuracyEpsilon},
		{PlotEpsilon, r.PlotEpsilonSteps},
	}
	for _, wr := range writers {
		if err := data.WriteFileAtomic(filepath.Join(dir, wr.name), wr.write); err != nil {
			return fmt.Errorf("%s: %w", wr.name, err)
		}
	}
	return nil
}

// WriteCSV writes one row per cell and accounting mode (one row with empty mode columns for a
// cell without ε).
func (r *Results) WriteCSV(w io.Writer) error {
	cw := csv.NewWriter(w)
	head := []string{"index", "id"}
	head = append(head, r.Axes...)
	head = append(head, "status", "error", "test_accuracy", "steps", "ms_per_step", "wall_s", "mode", "epsilon", "delta", "label", "mode_error", "private")
	if err := cw.Write(head); err != nil {
		return err
	}
	f := func(x float64) string { return strconv.FormatFloat(x, 'g', 8, 64) }
	for _, c := range r.Cells {
		row := []string{strconv.Itoa(c.Index), c.ID}
		for _, a := range r.Axes {
			row = append(row, c.Label(a))
		}
		row = append(row, c.Status, c.Error)
		if c.Summary == nil {
			if err := cw.Write(append(row, "", "", "", "", "", "", "", "", "", "")); err != nil {
				return err
			}
			continue
		}
		s := c.Summary
		row = append(row, f(s.TestAccuracy), strconv.Itoa(s.Steps), f(s.MsPerStep), f(s.WallSec))
		priv := privateMark(s)
		if len(s.Epsilon) == 0 {
			if err := cw.Write(append(row, "", "", "", "", "", priv)); err != nil {
				return err
			}
		}
		for _, e := range s.Epsilon {
			eps := f(e.Epsilon)
			if e.Error != "" {
				eps = ""
			}
			if err := cw.Write(append(append([]string(nil), row...), e.Mode, eps, f(e.Delta), string(e.Label), e.Error, priv)); err != nil {
				return err
			}
		}
	}
	cw.Flush()
	return cw.Error()
}

// WriteMarkdown writes the table of groups (accuracy mean ± std over seeds, ε per mode with its
// label, steps, ms/step, wall time), the cells that did not finish, and the privacy note.
func (r *Results) WriteMarkdown(w io.Writer) error {
	var b strings.Builder
	fmt.Fprintf(&b, "## %s\n\n", r.Suite)
	if r.Description != "" {
		fmt.Fprintf(&b, "%s\n\n", strings.TrimSpace(r.Description))
	}
	modes := r.Modes()
	var axes []string
	for _, a := range r.Axes {
		if a != SeedAxis {
			axes = append(axes, a)
		}
	}
	head := append(append([]string(nil), axes...), "seeds", "test accuracy")
	for _, m := range modes {
		head = append(head, "ε "+m)
	}
	head = append(head, "private", "steps", "ms/step", "wall (s, seeds summed)")
	refs := false
	for _, g := range r.Groups {
		refs = refs || g.Reference != ""
	}
	if refs {
		head = append(head, "published")
	}
	fmt.Fprintf(&b, "| %s |\n|%s\n", strings.Join(head, " | "), strings.Repeat(" --- |", len(head)))
	for _, g := range r.Groups {
		var row []string
		for _, a := range axes {
			row = append(row, g.label(a))
		}
		if g.Unavailable != "" {
			row = append(row, "–", "not yet available: "+g.Unavailable)
			for range modes {
				row = append(row, "")
			}
			row = append(row, "", "", "", "")
			if refs {
				row = append(row, g.Reference)
			}
			fmt.Fprintf(&b, "| %s |\n", strings.Join(row, " | "))
			continue
		}
		row = append(row, fmt.Sprintf("%d/%d", g.Seeds, g.Cells))
		if g.Seeds == 0 {
			row = append(row, "–")
		} else {
			row = append(row, fmt.Sprintf("%.2f ± %.2f %%", 100*g.AccuracyMean, 100*g.AccuracyStd))
		}
		for _, m := range modes {
			cell := ""
			for _, e := range g.Epsilon {
				if e.Mode == m {
					cell = fmtEps(e)
				}
			}
			row = append(row, cell)
		}
		switch {
		case g.Seeds == 0:
			row = append(row, "")
		case g.NotPrivate > 0:
			row = append(row, fmt.Sprintf("**NO** (%d/%d seeded)", g.NotPrivate, g.Seeds))
		default:
			row = append(row, "yes")
		}
		if g.Seeds == 0 {
			row = append(row, "", "", "")
		} else {
			row = append(row, fmt.Sprintf("%.0f", g.Steps), fmt.Sprintf("%.1f", g.MsPerStep), fmt.Sprintf("%.0f", g.WallSec))
		}
		if refs {
			row = append(row, g.Reference)
		}
		fmt.Fprintf(&b, "| %s |\n", strings.Join(row, " | "))
	}
	b.WriteString("\nε: the largest over the group's seeds, per accounting mode, with its label (certified: the theorem's assumptions were declared and checked; paper: the paper's formula as printed; approximate: an estimate). n/a: the accountant does not cover the run. private: NO when a cell was seeded (its noise can be regenerated from the seed, so its outputs are not private whatever ε says).\n")
	if ps := r.Problems(); len(ps) > 0 {
		b.WriteString("\nCells that did not finish:\n\n")
		for _, c := range ps {
			msg := c.Error
			if msg == "" {
				msg = "no summary and no error: not run yet, or interrupted (run it again to resume)"
			}
			fmt.Fprintf(&b, "- %d %s: %s: %s\n", c.Index, c.ID, c.Status, msg)
		}
	}
	fmt.Fprintf(&b, "\nPrivacy: %s\n", r.PrivacyNote)
	_, err := io.WriteString(w, b.String())
	return err
}

// privateMark is the private column of a cell: "no (seeded)" for a run whose outputs are not
// private, "yes" otherwise.
func privateMark(s *train.Summary) string {
	if s.NotPrivate != "" {
		return "no (seeded)"
	}
	return "yes"
}
