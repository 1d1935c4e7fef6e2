package sweep

import (
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/dptrain/dptrain/train"
	"github.com/dptrain/dptrain/train/rundir"
)

// Cell statuses in collected results.
const (
	StatusDone        = "done"
	StatusFailed      = "failed"
	StatusMissing     = "missing"
	StatusUnavailable = "unavailable"
)

// CellResult is one cell's outcome.
type CellResult struct {
	Cell
	Status string `json:"status"`
	// Error is the failure (error.txt) or the reason the cell is unavailable.
	Error   string         `json:"error,omitempty"`
	Summary *train.Summary `json:"summary,omitempty"`
	// Curve is ε against steps per mode, from the run's private/metrics.jsonl (only its ε).
	Curve map[string][]Point `json:"-"`
}

// Point is one (x, y) sample.
type Point struct{ X, Y float64 }

// Group is the cells that differ only by seed.
type Group struct {
	// Labels are the group's values on every axis but the seed axis.
	Labels []Label `json:"labels"`
	// Seeds is how many of its cells finished; Cells how many it has.
	Seeds, Cells int
	// AccuracyMean and AccuracyStd are over the finished seeds (sample standard deviation;
	// 0 for one seed).
	AccuracyMean float64 `json:"accuracy_mean"`
	AccuracyStd  float64 `json:"accuracy_std"`
	// Epsilon is, per accounting mode, the largest ε over the finished seeds (rounding against
	// privacy), with its label.
	Epsilon   []train.ModeEpsilon `json:"epsilon"`
	Steps     float64             `json:"steps_mean"`
	MsPerStep float64             `json:"ms_per_step_mean"`
	WallSec   float64             `json:"wall_s_total"`
	// NotPrivate counts the group's finished cells whose outputs are not private (seeded
	// runs: every noise draw can be regenerated from the seed).
	NotPrivate int `json:"not_private"`
	// Unavailable is the reason the group's cells cannot run yet, if so.
	Unavailable string `json:"unavailable,omitempty"`
	// Reference is the published result for the group's setting, if the suite gives one.
	Reference string `json:"reference,omitempty"`
}

// Results are a collected plan.
type Results struct {
	Suite       string       `json:"suite"`
	Description string       `json:"description,omitempty"`
	Axes        []string     `json:"axes"`
	Cells       []CellResult `json:"cells"`
	Groups      []Group      `json:"groups"`
	PrivacyNote string       `json:"privacy_note"`
}

// PrivacyNote is printed under every collected table.
const PrivacyNote = "Each cell's ε covers that run alone. Choosing the best cell (or its hyperparameters) " +
	"on private data is itself a release that these numbers do not account for: tune on public data, " +
	"or account for the selection (for example with a private hyperparameter-tuning mechanism). " +
	"Seeded cells (the private column) are NOT private whatever their ε: every noise draw can be regenerated from the seed. " +
	"ms/step and wall time come from each run's private/ directory (they depend on the realised batch sizes): the tables that show them are the operator's."

// Collect reads every cell's summary (or error) and groups the cells over seeds.
func Collect(p *Plan) (*Results, error) {
	r := &Results{Suite: p.Suite, Description: p.Description, Axes: p.Axes, PrivacyNote: PrivacyNote}
	for i, c := range p.Cells {
		cr := CellResult{Cell: c}
		switch {
		case c.Unavailable != "":
			cr.Status, cr.Error = StatusUnavailable, c.Unavailable
		case p.Done(i):
			s, err := readSummary(filepath.Join(p.RunDir(i), rundir.SummaryFile))
			if err != nil {
				return nil, err
			}
			// Timing is the operator's (it depends on the realised batch sizes): it is in
			// the run's private/, not in its summary.
			if tm, err := rundir.ReadTiming(p.RunDir(i)); err == nil {
				s.WallSec, s.MsPerStep = tm.WallSec, tm.MsPerStep
			}
			cr.Status, cr.Summary = StatusDone, s
			if cr.Curve, err = readCurve(rundir.PrivatePath(p.RunDir(i), rundir.MetricsJSONL)); err != nil {
				return nil, err
			}
		default:
			cr.Status = StatusMissing
			b, err := os.ReadFile(filepath.Join(p.CellDir(i), ErrorFile))
			if err == nil {
				cr.Status, cr.Error = StatusFailed, strings.TrimSpace(string(b))
			} else if !errors.Is(err, os.ErrNotExist) {
				return nil, err
			}
		}
		r.Cells = append(r.Cells, cr)
	}
	r.Groups = group(r.Cells)
	return r, nil
}

func groupKey(c Cell) (string, []Label) {
	var ls []Label
	var ks []string
	for _, l := range c.Labels {
		if l.Axis == SeedAxis {
			continue
		}
		ls = append(ls, l)
		ks = append(ks, l.Value)
	}
	return strings.Join(ks, "\x00"), ls
}

func group(cells []CellResult) []Group {
	var order []string
	byKey := map[string][]CellResult{}
	labels := map[string][]Label{}
	for _, c := range cells {
		k, ls := groupKey(c.Cell)
		if _, ok := byKey[k]; !ok {
			order = append(order, k)
			labels[k] = ls
		}
		byKey[k] = append(byKey[k], c)
	}
	var gs []Group
	for _, k := range order {
		g := Group{Labels: labels[k], Cells: len(byKey[k]), Reference: byKey[k][0].Reference}
		var acc []float64
		eps := map[string]train.ModeEpsilon{}
		var modes []string
		for _, c := range byKey[k] {
			if c.Status == StatusUnavailable {
				g.Unavailable = c.Error
			}
			if c.Summary == nil {
				continue
			}
			s := c.Summary
			if s.NotPrivate != "" {
				g.NotPrivate++
			}
			acc = append(acc, s.TestAccuracy)
			g.Steps += float64(s.Steps)
			g.MsPerStep += s.MsPerStep
			g.WallSec += s.WallSec
			for _, e := range s.Epsilon {
				old, seen := eps[e.Mode]
				if !seen {
					modes = append(modes, e.Mode)
				}
				switch {
				case !seen:
					eps[e.Mode] = e
				case e.Error != "" && old.Error == "":
					eps[e.Mode] = e
				case old.Error == "" && e.Epsilon > old.Epsilon:
					eps[e.Mode] = e
				}
			}
		}
		g.Seeds = len(acc)
		if g.Seeds > 0 {
			g.Steps /= float64(g.Seeds)
			g.MsPerStep /= float64(g.Seeds)
			g.AccuracyMean, g.AccuracyStd = meanStd(acc)
		}
		for _, m := range modes {
			g.Epsilon = append(g.Epsilon, eps[m])
		}
		gs = append(gs, g)
	}
	return gs
}

// meanStd returns the mean and the sample standard deviation (0 for fewer than two values).
func meanStd(x []float64) (float64, float64) {
	var s float64
	for _, v := range x {
		s += v
	}
	m := s / float64(len(x))
	if len(x) < 2 {
		return m, 0
	}
	var ss float64
	for _, v := range x {
		ss += (v - m) * (v - m)
	}
	return m, math.Sqrt(ss / float64(len(x)-1))
}

// Modes lists every accounting mode that appears in the results, in order of appearance.
func (r *Results) Modes() []string {
	seen := map[string]bool{}
	var ms []string
	for _, g := range r.Groups {
		for _, e := range g.Epsilon {
			if !seen[e.Mode] {
				seen[e.Mode] = true
				ms = append(ms, e.Mode)
			}
		}
	}
	return ms
}

// Problems lists the cells that did not finish, with their status and error, sorted by index.
func (r *Results) Problems() []CellResult {
	var ps []CellResult
	for _, c := range r.Cells {
		if c.Status == StatusFailed || c.Status == StatusMissing {
			ps = append(ps, c)
		}
	}
	sort.Slice(ps, func(i, j int) bool { return ps[i].Index < ps[j].Index })
	return ps
}

func (g Group) name() string {
	vs := make([]string, len(g.Labels))
	for i, l := range g.Labels {
		vs[i] = l.Value
	}
	return strings.Join(vs, " ")
}

func (g Group) label(axis string) string {
	for _, l := range g.Labels {
		if l.Axis == axis {
			return l.Value
		}
	}
	return ""
}

func fmtEps(e train.ModeEpsilon) string {
	if e.Error != "" {
		return "n/a"
	}
	return fmt.Sprintf("%.3f (%s)", e.Epsilon, e.Label)
}
