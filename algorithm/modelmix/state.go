package modelmix

import (
	"fmt"

	"github.com/dptrain/dptrain/optim"
)

// statePrevIterate names ModelMix's w_{k−2} (a vector) in checkpoints; stateVelocity the
// heavy-ball velocity of Config.Momentum.
const (
	statePrevIterate = "previous_iterate"
	stateVelocity    = "velocity"
)

// State implements optim.Checkpointer: "steps" and, after the first step, "previous_iterate"
// and, with momentum, "velocity".
func (o *Optimizer) State() (map[string][]float32, map[string]float64) {
	vecs := map[string][]float32{}
	if o.prev != nil {
		vecs[statePrevIterate] = o.prev
	}
	if o.vel != nil {
		vecs[stateVelocity] = o.vel
	}
	return vecs, map[string]float64{optim.StateSteps: float64(o.k)}
}

// Restore implements optim.Checkpointer.
func (o *Optimizer) Restore(vecs map[string][]float32, sc map[string]float64) error {
	names := []string{statePrevIterate}
	if o.cfg.Momentum > 0 {
		names = append(names, stateVelocity)
	}
	if err := optim.CheckStateNames("ModelMix", vecs, sc, names, []string{optim.StateSteps}); err != nil {
		return err
	}
	k, err := optim.StateCount(sc, optim.StateSteps, "step count")
	if err != nil {
		return err
	}
	if k > 0 && len(vecs[statePrevIterate]) == 0 {
		return fmt.Errorf("modelmix: ModelMix checkpoint after %d steps has no previous iterate w_{k−2} to mix with: %s", k, optim.OtherRunHint)
	}
	if k > 0 && o.cfg.Momentum > 0 && len(vecs[stateVelocity]) == 0 {
		return fmt.Errorf("modelmix: ModelMix checkpoint after %d steps has no momentum velocity: %s", k, optim.OtherRunHint)
	}
	o.prev, o.vel, o.k = optim.CloneState(vecs[statePrevIterate]), optim.CloneState(vecs[stateVelocity]), k
	return nil
}
