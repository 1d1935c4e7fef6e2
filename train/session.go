package train

import (
	"errors"
	"fmt"

	"github.com/dptrain/dptrain"
	"github.com/dptrain/dptrain/optim"
)

// session returns the private loop every run goes through: the session of the run's plan
// (dptrain.Plan), which draws from the plan's sampler, steps its optimizer, composes into its
// live accountants (appending each step's records to the ledger as it does) and holds
// privacy.target_epsilon with privacy.stop_accountant.
func (t *Trainer) session(oracle optim.GradientOracle) (*dptrain.Session, error) {
	if t.live != nil {
		if pr := t.cfg.Privacy; pr.TargetEpsilon > 0 {
			if r, ok := t.live.void[pr.StopAccountant]; ok {
				return nil, fmt.Errorf("privacy.stop_accountant %s no longer applies to this run: %s. Name a composition accountant (rdp or pld) in privacy.stop_accountant to continue", pr.StopAccountant, r)
			}
		}
	}
	return t.dp.NewSession(oracle)
}

// stepFailed turns a failed step into the trainer's error: a divergence report when the
// optimizer found non-finite values, otherwise the step, its cause and the last good
// checkpoint.
func (t *Trainer) stepFailed(err error) error {
	var se *dptrain.StepError
	if !errors.As(err, &se) {
		var le *dptrain.LedgerError
		if errors.As(err, &le) {
			return fmt.Errorf("step %d of %d: %w (%s)", le.Step, t.total, err, t.lastGood())
		}
		return err
	}
	if errors.Is(se.Err, optim.ErrNotFinite) {
		return t.diverged(se.Step, se.Err.Error())
	}
	return fmt.Errorf("step %d of %d: %w (%s)", se.Step, t.total, se.Err, t.lastGood())
}
