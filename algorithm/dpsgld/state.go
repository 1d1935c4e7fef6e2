package dpsgld

import (
	"fmt"

	"github.com/dptrain/dptrain/optim"
)

// stateInitialised names the scalar that is 1 if Init ran, else 0, in checkpoints.
const stateInitialised = "initialised"

// State implements optim.Checkpointer: "steps" and "initialised" (1 if Init ran, else 0). DP-SGLD
// keeps no vectors besides the iterate.
func (o *Optimizer) State() (map[string][]float32, map[string]float64) {
	init := 0.0
	if o.inited {
		init = 1
	}
	return map[string][]float32{}, map[string]float64{optim.StateSteps: float64(o.k), stateInitialised: init}
}

// Restore implements optim.Checkpointer. The caller restores the parameters, which replace the
// initial draw: after restoring a checkpoint taken after Init, Init must not be called again.
func (o *Optimizer) Restore(vecs map[string][]float32, sc map[string]float64) error {
	if err := optim.CheckStateNames("DP-SGLD", vecs, sc, nil, []string{optim.StateSteps, stateInitialised}); err != nil {
		return err
	}
	k, err := optim.StateCount(sc, optim.StateSteps, "step count")
	if err != nil {
		return err
	}
	init, err := optim.StateCount(sc, stateInitialised, "initialisation flag")
	if err != nil {
		return err
	}
	if init > 1 || (k > 0 && init == 0) {
		return fmt.Errorf("dpsgld: DP-SGLD checkpoint after %d steps has initialisation flag %d: the checkpoint is damaged", k, init)
	}
	o.k, o.inited = k, init == 1
	return nil
}
