package train

import (
	"fmt"
	"slices"
	"strings"

	"github.com/dptrain/dptrain/accounting"
	"github.com/dptrain/dptrain/train/config"
)

// targetBound is the note every report of a run stopped or calibrated under a paper or
// approximate bound carries: the target was met under that bound, and the certified ε of the
// same run (or that no certified bound covers it). Empty when the stopping accountant is
// certified or there is no target.
func targetBound(p config.PrivacyConfig, eps []ModeEpsilon, beside *ModeEpsilon) string {
	if p.TargetEpsilon <= 0 {
		return ""
	}
	var stop *ModeEpsilon
	var cert []string
	for i, e := range eps {
		if e.Mode == p.StopAccountant {
			stop = &eps[i]
		}
		if e.Error == "" && e.Label == accounting.Certified {
			cert = append(cert, fmt.Sprintf("ε[%s] = %.4g", e.Mode, e.Epsilon))
		}
	}
	if stop == nil || stop.Label == accounting.Certified {
		return ""
	}
	s := fmt.Sprintf("target ε = %g met under %s's %s bound", p.TargetEpsilon, stop.Mode, stop.Label)
	if len(cert) == 0 && beside != nil {
		cert = append(cert, fmt.Sprintf("ε[%s, not configured] = %.4g", beside.Mode, beside.Epsilon))
	}
	if len(cert) == 0 {
		return s + "; no certified bound covers this run"
	}
	return s + "; certified " + strings.Join(cert, ", ")
}

// certifiedBeside returns the certified ε of the run, computed by the session from the run's
// whole ledger by the first of rdp and pld that covers it (dptrain.Session.Certified), when
// none of the configured accountants in eps gives one (the privacy contract: the certified ε
// of the same run beside any paper or approximate one); nil when one does, or when neither
// covers the run.
func (t *Trainer) certifiedBeside(eps []ModeEpsilon) *ModeEpsilon {
	for _, e := range eps {
		if e.Error == "" && e.Label == accounting.Certified {
			return nil
		}
	}
	if t.sess == nil {
		return nil
	}
	g, err := t.sess.Certified()
	if err != nil || slices.Contains(t.cfg.Privacy.Accountants, g.Accountant) {
		return nil
	}
	return &ModeEpsilon{Mode: g.Accountant, Label: g.Label, Epsilon: g.Epsilon, Delta: g.Delta, Order: g.Order}
}
