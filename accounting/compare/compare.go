package compare

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"sort"

	"github.com/dptrain/dptrain/accounting"
	"github.com/dptrain/dptrain/accounting/modes"
)

// Point is ε after a number of steps.
type Point struct {
	Steps   int     `json:"steps"`
	Epsilon float64 `json:"epsilon"`
}

// Row is one mode's outcome.
type Row struct {
	Mode       string             `json:"mode"`
	Label      accounting.Label   `json:"label,omitempty"`
	Applicable bool               `json:"applicable"`
	Reason     string             `json:"reason,omitempty"`
	Epsilon    float64            `json:"epsilon,omitempty"`
	Delta      float64            `json:"delta"`
	Order      float64            `json:"order,omitempty"`
	Constants  map[string]float64 `json:"constants,omitempty"`
	// At is ε at the final step and at the requested steps (Spec.At) that were evaluated.
	At []Point `json:"at,omitempty"`
	// Source names the mode a "best" row was taken from.
	Source string `json:"source,omitempty"`

	// Curve is ε at every checkpoint, in increasing steps.
	Curve []Point `json:"-"`
}

// Report is the outcome of Evaluate.
type Report struct {
	Steps int     `json:"steps"`
	Delta float64 `json:"delta"`
	Modes []Row   `json:"modes"`
	// Best is the pointwise smallest ε over the applicable certified modes; nil when none
	// applies.
	Best *Row `json:"best"`
}

// Schedule is a DP-MBCD schedule: block (first+i) mod Blocks is updated during the i-th run of
// Epochs epochs (of n/b steps each). Blocks ≤ 1 updates the step's own block throughout.
type Schedule struct{ Blocks, Epochs int }

// Builder builds the accountant of a mode for a run, or says why the mode does not apply.
type Builder func(name string, run accounting.Run) (accounting.Accountant, error)

// Spec describes the run to compare.
type Spec struct {
	Run  accounting.Run
	Step accounting.Step // one step's record; Count, BatchIndex and (with a Schedule) Block are set per chunk
	// Steps is the number of steps K; ε is reported at K and at the steps of At in (0, K].
	Steps int
	At    []int
	Delta float64
	// Schedule is the DP-MBCD block schedule (zero: none).
	Schedule Schedule
	// Checkpoints are the steps at which ε is evaluated (see Checkpoints); nil means Steps
	// and At.
	Checkpoints []int

	// Modes and Build default to modes.Names() and modes.New.
	Modes []string
	Build Builder
	// Name names a declaration field ("Run.LastIterateOnly") in a Reason as the caller's
	// user sets it (accounting.Describe; nil: the field's own name).
	Name func(field string) string
}

// Evaluate composes the run in every mode and returns the report.
func Evaluate(s Spec) (Report, error) {
	if s.Steps <= 0 {
		return Report{}, fmt.Errorf("compare: %d steps, want > 0", s.Steps)
	}
	if !(s.Delta > 0 && s.Delta < 1) {
		return Report{}, fmt.Errorf("compare: δ = %v, want 0 < δ < 1", s.Delta)
	}
	names, build := s.Modes, s.Build
	if names == nil {
		names = modes.Names()
	}
	if build == nil {
		build = modes.New
	}
	ts := s.Checkpoints
	if ts == nil {
		ts = Checkpoints(s.Steps, s.At, 0)
	}
	report := Report{Steps: s.Steps, Delta: s.Delta}
	for _, name := range names {
		row := evaluate(build, name, s, ts)
		for _, p := range row.Curve {
			if p.Steps == s.Steps || slices.Contains(s.At, p.Steps) {
				row.At = append(row.At, p)
			}
		}
		report.Modes = append(report.Modes, row)
	}
	report.Best = Best(report.Modes)
	return report, nil
}

// Checkpoints returns the sorted distinct steps in (0, steps] at which ε is evaluated: steps,
// those of at in range, and, when points > 0, points steps spread evenly up to steps (for a
// plot).
func Checkpoints(steps int, at []int, points int) []int {
	set := map[int]bool{steps: true}
	for _, t := range at {
		if t > 0 && t <= steps {
			set[t] = true
		}
	}
	for i := 1; i <= points; i++ {
		set[int(math.Ceil(float64(i)*float64(steps)/float64(points)))] = true
	}
	var ts []int
	for t := range set {
		if t > 0 {
			ts = append(ts, t)
		}
	}
	sort.Ints(ts)
	return ts
}

// evaluate composes the run in one mode, evaluating ε at every checkpoint.
func evaluate(build Builder, name string, s Spec, ts []int) Row {
	explain := func(err error) string { return accounting.Describe(err, s.Name) }
	base, sched, delta := s.Step, s.Schedule, s.Delta
	row := Row{Mode: name, Delta: delta}
	acc, err := build(name, s.Run)
	if err != nil {
		row.Reason = explain(err)
		return row
	}
	perEpoch := 0
	if base.BatchSize > 0 && base.DatasetSize >= base.BatchSize {
		perEpoch = base.DatasetSize / base.BatchSize
	}
	done := 0
	var last accounting.Guarantee
	for _, t := range ts {
		for done < t {
			st := base
			st.Count = t - done
			if perEpoch > 0 {
				st.BatchIndex = done % perEpoch
			}
			if sched.Blocks > 1 && perEpoch > 0 {
				run := sched.Epochs * perEpoch // steps per block visit
				st.Count = min(st.Count, run-done%run)
				st.Block = (base.Block + done/run) % sched.Blocks
			}
			if err := acc.Compose(st); err != nil {
				row.Reason = fmt.Sprintf("step %d: %s", done+1, explain(err))
				return row
			}
			done += st.Count
		}
		g, err := acc.Epsilon(delta)
		if err != nil {
			row.Reason = fmt.Sprintf("after %d steps: %s", t, explain(err))
			return row
		}
		if math.IsNaN(g.Epsilon) || math.IsInf(g.Epsilon, 0) {
			row.Reason = fmt.Sprintf("after %d steps: ε = %v", t, g.Epsilon)
			return row
		}
		row.Curve = append(row.Curve, Point{t, g.Epsilon})
		last = g
	}
	row.Applicable = true
	row.Label, row.Epsilon, row.Order = last.Label, last.Epsilon, last.Order
	if last.Label == "" {
		row.Label = acc.Label()
	}
	if c, ok := acc.(interface{ Constants() map[string]float64 }); ok {
		row.Constants = c.Constants()
	}
	return row
}

// Best returns the "best" row: at every evaluated step the smallest ε over the applicable
// certified modes (each is a valid guarantee, so their minimum is one), with the final step's
// order and constants taken from the mode that attains it, named in Source; nil when no
// certified mode applies.
func Best(rows []Row) *Row {
	var best *Row
	for _, row := range rows {
		if !row.Applicable || row.Label != accounting.Certified {
			continue
		}
		if best == nil {
			b := row
			b.Mode, b.Source = "best", row.Mode
			b.Curve = append([]Point(nil), row.Curve...)
			b.At = append([]Point(nil), row.At...)
			best = &b
			continue
		}
		for i := range best.Curve {
			if i < len(row.Curve) && row.Curve[i].Epsilon < best.Curve[i].Epsilon {
				best.Curve[i] = row.Curve[i]
			}
		}
		for i := range best.At {
			if i < len(row.At) && row.At[i].Epsilon < best.At[i].Epsilon {
				best.At[i] = row.At[i]
			}
		}
		if row.Epsilon < best.Epsilon {
			src := *best
			*best = row
			best.Mode, best.Source, best.Curve, best.At = "best", row.Mode, src.Curve, src.At
		}
	}
	return best
}

// ErrNoSampleRate is returned by Mechanism.Step when neither the sample rate nor the batch and
// dataset sizes that give it are known.
var ErrNoSampleRate = errors.New("compare: no sample rate: give it, or the batch size and the dataset size")

// Mechanism is what a user states about one step; Step completes it into the step's record.
type Mechanism struct {
	Mechanism    accounting.Mechanism
	Sampling     accounting.Sampling
	Neighbouring accounting.Neighbouring
	// SampleRate q; 0 means BatchSize/DatasetSize, or 1 under full-batch sampling.
	SampleRate      float64
	NoiseMultiplier float64
	// ClipNorm C; 0 means Lipschitz, or 1 when that is 0 too.
	ClipNorm, Lipschitz float64
	StepSize            float64
	// BatchSize b; 0 means q·DatasetSize (DatasetSize under full-batch sampling).
	BatchSize, DatasetSize, MinBatchSize int
	MixWidth                             float64
	LinfParts, Block                     int
}

// Step returns the record of one step (Count and BatchIndex unset): the sample rate, batch
// size and sensitivity completed from their defaults, and the noise std z·C.
func (m Mechanism) Step() (accounting.Step, error) {
	s := m.Sampling
	q := m.SampleRate
	if q == 0 {
		switch {
		case s == accounting.FullBatch:
			q = 1
		case m.BatchSize > 0 && m.DatasetSize > 0:
			q = float64(m.BatchSize) / float64(m.DatasetSize)
		default:
			return accounting.Step{}, ErrNoSampleRate
		}
	}
	b := m.BatchSize
	if b == 0 && m.DatasetSize > 0 {
		b = int(math.Round(q * float64(m.DatasetSize)))
	}
	if s == accounting.FullBatch && b == 0 {
		b = m.DatasetSize
	}
	c := m.ClipNorm
	if c == 0 {
		c = m.Lipschitz
	}
	if c == 0 {
		c = 1
	}
	return accounting.Step{
		Mechanism:       m.Mechanism,
		Sampling:        s,
		Neighbouring:    m.Neighbouring,
		NoiseMultiplier: m.NoiseMultiplier,
		SampleRate:      q,
		Sensitivity:     c,
		NoiseStd:        m.NoiseMultiplier * c,
		StepSize:        m.StepSize,
		BatchSize:       b,
		DatasetSize:     m.DatasetSize,
		MinBatchSize:    m.MinBatchSize,
		MixWidth:        m.MixWidth,
		LinfParts:       m.LinfParts,
		Block:           m.Block,
	}, nil
}
