package train

import (
	"fmt"
	"io"
	"strings"
	"time"
)

// Progress draws a one-line progress bar with loss, accuracy and ε per accountant (with its
// label), redrawn in place on a terminal; on anything else it writes a line every `every`
// steps so that logs stay readable.
type Progress struct {
	w        io.Writer
	terminal bool
	every    int
	last     time.Time
	privacy  []ModeEpsilon // the latest ε per mode, shown until the next snapshot
}

// NewProgress writes to w; terminal selects in-place redrawing.
func NewProgress(w io.Writer, terminal bool, every int) *Progress {
	if every < 1 {
		every = 1
	}
	return &Progress{w: w, terminal: terminal, every: every}
}

// AfterStep implements Hook.
func (p *Progress) AfterStep(s *StepInfo) error {
	if s.Privacy != nil {
		p.privacy = s.Privacy
	}
	final := s.Step == s.TotalSteps
	if p.terminal {
		if !final && time.Since(p.last) < 100*time.Millisecond {
			return nil
		}
		p.last = time.Now()
		fmt.Fprintf(p.w, "\r\033[K%s", progressLine(s, p.privacy))
		if final {
			fmt.Fprintln(p.w)
		}
		return nil
	}
	if s.Step%p.every == 0 || final || s.Test != nil {
		fmt.Fprintln(p.w, progressLine(s, p.privacy))
	}
	return nil
}

func progressLine(s *StepInfo, privacy []ModeEpsilon) string {
	var b strings.Builder
	const width = 20
	frac := 0.0
	if s.TotalSteps > 0 {
		frac = float64(s.Step) / float64(s.TotalSteps)
	}
	n := int(frac * width)
	fmt.Fprintf(&b, "[%s%s] %d/%d ep %.2f loss %.4f acc %.3f", strings.Repeat("=", n), strings.Repeat(" ", width-n),
		s.Step, s.TotalSteps, s.Epoch, s.Loss, s.Accuracy)
	if s.Test != nil {
		fmt.Fprintf(&b, " test %.4f", s.Test.Accuracy)
	}
	for _, m := range privacy {
		if m.Error != "" {
			fmt.Fprintf(&b, " ε[%s]=n/a", m.Mode)
			continue
		}
		fmt.Fprintf(&b, " ε[%s,%s]=%.3f", m.Mode, m.Label, m.Epsilon)
	}
	return b.String()
}
