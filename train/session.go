package train

import (
	"errors"
	"fmt"

	"github.com/dptrain/dptrain"
	"github.com/dptrain/dptrain/accounting"
	"github.com/dptrain/dptrain/optim"
)

// session couples the trainer's prepared pieces into the private loop every run goes
// through: a dptrain.Session over the training split, drawing from the trainer's sampler,
// stepping its optimizer, composing into its live accountants (and, first, appending each
// step's records to the ledger), and holding privacy.target_epsilon with
// privacy.stop_accountant.
func (t *Trainer) session(oracle optim.GradientOracle) (*dptrain.Session, error) {
	p := dptrain.Parts{Model: oracle, Data: t.train, Sampler: t.sampler, Optimizer: t.opt, PlannedSteps: t.total,
		Streams: map[string]*optim.Noise{"noise": t.noise, "sampler": t.samplerNoise}}
	if t.ledger != nil {
		// Recorded first: the step has run on the data, whatever happens next.
		p.Released = func(step int, records []accounting.Step) error { return t.ledger.append(step, records) }
	}
	if t.dist != nil {
		p.Agree = t.dist.decide
	}
	if t.live != nil {
		p.Accountants = t.live.Live
		if pr := t.cfg.Privacy; pr.TargetEpsilon > 0 {
			if r, ok := t.live.void[pr.StopAccountant]; ok {
				return nil, fmt.Errorf("privacy.stop_accountant %s no longer applies to this run: %s. Name a composition accountant (rdp or pld) in privacy.stop_accountant to continue", pr.StopAccountant, r)
			}
			p.Stop = dptrain.StopRule{Accountant: pr.StopAccountant, TargetEpsilon: pr.TargetEpsilon, Delta: pr.Delta}
		}
	}
	return dptrain.NewSession(p)
}

// stepFailed turns a failed step into the trainer's error: a divergence report when the
// optimizer found non-finite values, otherwise the step, its cause and the last good
// checkpoint.
func (t *Trainer) stepFailed(err error) error {
	var se *dptrain.StepError
	if !errors.As(err, &se) {
		return err
	}
	if errors.Is(se.Err, optim.ErrNotFinite) {
		return t.diverged(se.Step, se.Err.Error())
	}
	return fmt.Errorf("step %d of %d: %w (%s)", se.Step, t.total, se.Err, t.lastGood())
}
