package dpsgd

import "github.com/dptrain/dptrain/optim"

// State implements optim.Checkpointer: "steps", and the update rule's "momentum", or "adam_m",
// "adam_v" and "adam_t".
func (o *Optimizer) State() (map[string][]float32, map[string]float64) {
	vecs, sc := map[string][]float32{}, map[string]float64{optim.StateSteps: float64(o.k)}
	optim.RuleState(o.cfg.Rule, vecs, sc)
	return vecs, sc
}

// Restore implements optim.Checkpointer.
func (o *Optimizer) Restore(vecs map[string][]float32, sc map[string]float64) error {
	k, err := optim.RestoreRuleSteps("DP-SGD with update rule "+o.cfg.Rule.Name(), o.cfg.Rule, vecs, sc)
	if err != nil {
		return err
	}
	o.k = k
	return nil
}
