package train

import (
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/dptrain/dptrain/accounting"
)

// Progress draws a progress line: the step, steps per second and the time left, ε of every
// accounting mode with its label (the last value computed, until the next), and loss and
// accuracy. On a terminal it is redrawn in place and fits the terminal's width: the least
// useful parts are dropped first (the bar, the epoch, the test accuracy, ...), and the labels
// are abbreviated (c = certified, p = paper, ~ = approximate) before any ε is. On anything
// else it writes a whole line every `every` steps so that logs stay readable.
type Progress struct {
	w        io.Writer
	terminal bool
	width    func() int // the terminal's columns, asked at every redraw (it may be resized); nil or 0: no limit
	every    int
	last     time.Time
	privacy  []ModeEpsilon // the latest ε per mode, shown until the next snapshot

	began     time.Time // this session's first step
	beganStep int
}

// NewProgress writes to w; terminal selects in-place redrawing, width (the terminal's columns,
// nil or 0 for no limit) the longest line drawn.
func NewProgress(w io.Writer, terminal bool, width func() int, every int) *Progress {
	if every < 1 {
		every = 1
	}
	return &Progress{w: w, terminal: terminal, width: width, every: every}
}

// AfterStep implements Hook.
func (p *Progress) AfterStep(s *StepInfo) error {
	now := time.Now()
	if p.began.IsZero() {
		p.began, p.beganStep = now, s.Step-1
	}
	if s.Privacy != nil {
		p.privacy = s.Privacy
	}
	final := s.Step == s.TotalSteps
	rate := 0.0
	if dt := now.Sub(p.began).Seconds(); dt > 0 {
		rate = float64(s.Step-p.beganStep) / dt
	}
	if p.terminal {
		if !final && now.Sub(p.last) < 100*time.Millisecond {
			return nil
		}
		p.last = now
		fmt.Fprintf(p.w, "\r\033[K%s", progressLine(s, p.privacy, rate, p.columns()))
		if final {
			fmt.Fprintln(p.w)
		}
		return nil
	}
	if s.Step%p.every == 0 || final || s.Test != nil {
		fmt.Fprintln(p.w, progressLine(s, p.privacy, rate, p.columns()))
	}
	return nil
}

func (p *Progress) columns() int {
	if p.width == nil {
		return 0
	}
	return p.width()
}

// part is one piece of the progress line; lower drop values are dropped first when the line
// is too wide.
type part struct {
	text string
	drop int
}

// progressLine renders the line for step s at rate steps per second within width columns
// (0: no limit).
func progressLine(s *StepInfo, privacy []ModeEpsilon, rate float64, width int) string {
	// short abbreviates the labels; compact writes each ε as mode=value followed by the
	// abbreviated label, for the narrowest terminals.
	build := func(short, compact bool) []part {
		var ps []part
		const bar = 20
		if s.TotalSteps > 0 {
			n := min(bar, bar*s.Step/s.TotalSteps)
			ps = append(ps, part{"[" + strings.Repeat("=", n) + strings.Repeat(" ", bar-n) + "]", 0})
		}
		ps = append(ps, part{fmt.Sprintf("%d/%d", s.Step, s.TotalSteps), 9})
		if rate > 0 {
			ps = append(ps, part{fmt.Sprintf("%.3g step/s", rate), 3})
			ps = append(ps, part{"ETA " + eta(float64(s.TotalSteps-s.Step)/rate), 6})
		}
		ps = append(ps, part{fmt.Sprintf("ep %.2f", s.Epoch), 1})
		ps = append(ps, part{fmt.Sprintf("loss %.4f", s.Loss), 5})
		ps = append(ps, part{fmt.Sprintf("acc %.3f", s.Accuracy), 4})
		if s.Test != nil {
			ps = append(ps, part{fmt.Sprintf("test %.4f", s.Test.Accuracy), 2})
		}
		for _, m := range privacy {
			if compact {
				v := "n/a"
				if m.Error == "" {
					v = fmt.Sprintf("%.3f%s", m.Epsilon, shortLabel(m.Label))
				}
				ps = append(ps, part{m.Mode + "=" + v, 8})
				continue
			}
			if m.Error != "" {
				ps = append(ps, part{fmt.Sprintf("ε[%s]=n/a", m.Mode), 7})
				continue
			}
			label := string(m.Label)
			if short {
				label = shortLabel(m.Label)
			}
			ps = append(ps, part{fmt.Sprintf("ε[%s,%s]=%.3f", m.Mode, label, m.Epsilon), 8})
		}
		return ps
	}
	join := func(ps []part) string {
		t := make([]string, len(ps))
		for i, p := range ps {
			t[i] = p.text
		}
		return strings.Join(t, " ")
	}
	if width <= 0 {
		return join(build(false, false))
	}
	// Drop the bar, the epoch, the test accuracy, the rate, the accuracy and the loss; then
	// abbreviate the labels and drop those again; then the time left; then write each ε as
	// mode=value. ε of every mode and the step count are never dropped.
	for stage := range 3 {
		short, compact := stage > 0, stage > 1
		ps := build(short, compact)
		last := 5
		if short {
			last = 6
		}
		for level := 0; ; level++ {
			if l := join(ps); len([]rune(l)) <= width {
				return l
			}
			if level > last {
				break
			}
			ps = dropLevel(ps, level)
		}
	}
	r := []rune(join(build(true, true)))
	return string(r[:max(0, width-1)]) + "…"
}

func dropLevel(ps []part, level int) []part {
	out := ps[:0:0]
	for _, p := range ps {
		if p.drop != level {
			out = append(out, p)
		}
	}
	return out
}

// shortLabel abbreviates a label for a narrow terminal (the legend is in dptrain train --help).
func shortLabel(l accounting.Label) string {
	switch l {
	case accounting.Certified:
		return "c"
	case accounting.Paper:
		return "p"
	case accounting.Approximate:
		return "~"
	}
	return string(l)
}

// eta renders seconds as 1h02m, 4m05s or 12s.
func eta(sec float64) string {
	d := time.Duration(sec * float64(time.Second)).Round(time.Second)
	switch {
	case d >= time.Hour:
		return fmt.Sprintf("%dh%02dm", int(d.Hours()), int(d.Minutes())%60)
	case d >= time.Minute:
		return fmt.Sprintf("%dm%02ds", int(d.Minutes()), int(d.Seconds())%60)
	}
	return fmt.Sprintf("%ds", int(d.Seconds()))
}
