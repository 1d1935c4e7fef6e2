package train

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/dptrain/dptrain/accounting"
	"github.com/dptrain/dptrain/accounting/modes"
	"github.com/dptrain/dptrain/data"
	"github.com/dptrain/dptrain/optim"
)

// coverage is what each configured accountant says of a run, probed with the run's declared
// step record before training: its label, or why its theorem does not cover the run.
type coverage struct {
	names   []string
	labels  map[string]accounting.Label
	reasons map[string]string
}

// probeAccountants builds every named accountant for run and feeds it steps (the
// privacy contract of package accounting: an accountant that cannot account for a run says so with an error).
// It stops before the next accountant once ctx is done, with an error wrapping ctx.Err().
func probeAccountants(ctx context.Context, names []string, run accounting.Run, steps []accounting.Step, delta float64) (coverage, error) {
	c := coverage{names: names, labels: map[string]accounting.Label{}, reasons: map[string]string{}}
	for _, name := range names {
		if err := ctx.Err(); err != nil {
			return c, fmt.Errorf("privacy.accountants: probing the accountants stopped before %s: %w", name, err)
		}
		a, err := modes.New(name, run)
		for _, s := range steps {
			if err == nil {
				err = a.Compose(s)
			}
		}
		var g accounting.Guarantee
		if err == nil {
			g, err = a.Epsilon(delta)
		}
		if err != nil {
			c.reasons[name] = err.Error()
			continue
		}
		c.labels[name] = g.Label
	}
	return c, nil
}

// explain lists each refusing accountant's reason.
func (c coverage) explain() string {
	var parts []string
	for _, n := range c.names {
		if r, ok := c.reasons[n]; ok {
			parts = append(parts, n+": "+r)
		}
	}
	return strings.Join(parts, "; ")
}

// stopPreference is the order in which a certified stopping and calibration accountant is
// chosen when privacy.stop_accountant is not set. RDP comes before PLD: PLD is tighter, but
// its per-step overshoot check costs more (about 0.1 s a step on the quick start, against
// milliseconds for RDP), so PLD governs stopping only when named.
var stopPreference = []string{"rdp", "pld"}

// resolveStop checks that some configured accountant covers the run and picks the accountant
// whose ε governs stopping and calibration: the one named in privacy.stop_accountant, else the
// first certified one (stopPreference, then the configured order). An approximate or paper
// bound may govern only with privacy.stop_on_uncertified_bound.
func resolveStop(p PrivacyConfig, c coverage) (string, error) {
	if len(c.labels) == 0 && p.AllowNoGuarantee && p.TargetEpsilon <= 0 {
		return "", nil
	}
	if len(c.labels) == 0 {
		return "", fmt.Errorf("privacy.accountants: no configured accountant covers this run (%s): add one whose theorem covers it (for example rdp with poisson sampling), or change optimizer.sampling (privacy.allow_no_guarantee: true trains without one)", c.explain())
	}
	if p.TargetEpsilon <= 0 {
		return p.StopAccountant, nil
	}
	if name := p.StopAccountant; name != "" {
		if r, ok := c.reasons[name]; ok {
			return "", fmt.Errorf("privacy.stop_accountant %s does not cover this run: %s", name, r)
		}
		if l := c.labels[name]; l != accounting.Certified && !p.StopOnUncertifiedBound {
			return "", fmt.Errorf("privacy.stop_accountant %s gives a %s bound, not a certified one: name a certified accountant (%s), or set privacy.stop_on_uncertified_bound: true to stop and calibrate under it",
				name, l, strings.Join(c.certified(), ", "))
		}
		return name, nil
	}
	if cert := c.certified(); len(cert) > 0 {
		return cert[0], nil
	}
	if p.StopOnUncertifiedBound {
		for _, n := range c.names {
			if _, ok := c.labels[n]; ok {
				return n, nil
			}
		}
	}
	return "", fmt.Errorf("privacy.target_epsilon: no configured accountant gives a certified bound for this run (%v): add rdp or pld to privacy.accountants, or set privacy.stop_accountant and privacy.stop_on_uncertified_bound: true", c.labels)
}

// certified lists the certified accountants, in stopPreference order, then the configured one.
func (c coverage) certified() []string {
	var out []string
	for _, n := range append(slices.Clone(stopPreference), c.names...) {
		if c.labels[n] == accounting.Certified && !slices.Contains(out, n) {
			out = append(out, n)
		}
	}
	return out
}

// checkCoverageContext probes the configured accountants with the optimizer's own declaration
// of a step and fixes the stopping accountant, so that a run no accountant covers fails before
// its first step instead of training to the end without a guarantee. It stops once ctx is done
// (a signal during start-up).
func (t *Trainer) checkCoverageContext(ctx context.Context, run accounting.Run) error {
	d, ok := t.opt.(optim.StepDeclarer)
	if !ok {
		return fmt.Errorf("the %s optimizer does not declare its steps: no accountant can be checked before training", t.cfg.Optimizer.Algorithm)
	}
	recs, err := d.DeclareStep(0, data.PlannedBatch(t.sampler, 0))
	if err != nil {
		return err
	}
	if len(recs) == 0 {
		return fmt.Errorf("algorithm %s declares no record for its first step: it must declare what it releases", t.cfg.Optimizer.Algorithm)
	}
	p := &t.cfg.Privacy
	c, err := probeAccountants(ctx, p.Accountants, run, recs, p.Delta)
	if err != nil {
		return err
	}
	stop, err := resolveStop(*p, c)
	if err != nil {
		return err
	}
	p.StopAccountant = stop
	return nil
}

// targetBound is the note every report of a run stopped or calibrated under a paper or
// approximate bound carries: the target was met under that bound, and the certified ε of the
// same run (or that no certified bound covers it). Empty when the stopping accountant is
// certified or there is no target.
func targetBound(p PrivacyConfig, eps []ModeEpsilon, beside *ModeEpsilon) string {
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

// certifiedBeside returns the certified ε of the run from the first of stopPreference (rdp,
// pld) that covers it, computed from the run's whole ledger, when none of the configured
// accountants in eps gives one (the privacy contract: the certified ε of the same run beside any paper or
// approximate one); nil when one does, or when neither covers the run.
func (t *Trainer) certifiedBeside(eps []ModeEpsilon) *ModeEpsilon {
	for _, e := range eps {
		if e.Error == "" && e.Label == accounting.Certified {
			return nil
		}
	}
	run := t.declaredRun(t.opt)
	delta := t.cfg.Privacy.Delta
	for _, name := range stopPreference {
		if slices.Contains(t.cfg.Privacy.Accountants, name) {
			continue
		}
		a, err := modes.New(name, run)
		if err != nil {
			continue
		}
		for _, r := range t.live.Ledger() {
			if err = a.Compose(r); err != nil {
				break
			}
		}
		if err != nil {
			continue
		}
		g, err := a.Epsilon(delta)
		if err != nil || g.Label != accounting.Certified {
			continue
		}
		return &ModeEpsilon{Mode: name, Label: g.Label, Epsilon: g.Epsilon, Delta: delta, Order: g.Order}
	}
	return nil
}
