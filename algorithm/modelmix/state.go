package modelmix

import (
	"fmt"

	"github.com/dptrain/dptrain/optim"
)

// statePrevIterate names ModelMix's w_{k−2} (a vector) in checkpoints.
const statePrevIterate = "previous_iterate"

// State implements optim.Checkpointer: "steps" and, after the first step, "previous_iterate".
func (o *Optimizer) State() (map[string][]float32, map[string]float64) {
	vecs := map[string][]float32{}
	if o.prev != nil {
		vecs[statePrevIterate] = o.prev
	}
	return vecs, map[string]float64{optim.StateSteps: float64(o.k)}
}

// Restore implements optim.Checkpointer.
func (o *Optimizer) Restore(vecs map[string][]float32, sc map[string]float64) error {
	if err := optim.CheckStateNames("ModelMix", vecs, sc, []string{statePrevIterate}, []string{optim.StateSteps}); err != nil {
		return err
	}
	k, err := optim.StateCount(sc, optim.StateSteps, "step count")
	if err != nil {
		return err
	}
	if k > 0 && len(vecs[statePrevIterate]) == 0 {
		return fmt.Errorf("modelmix: ModelMix checkpoint after %d steps has no previous iterate w_{k−2} to mix with: %s", k, optim.OtherRunHint)
	}
	o.prev, o.k = optim.CloneState(vecs[statePrevIterate]), k
	return nil
}
