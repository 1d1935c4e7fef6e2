package optim

import (
	"fmt"
	"maps"
	"math"
	"slices"
)

// Checkpointer is implemented by the optimizers whose state must survive a resume: *DPSGD (step
// counter, momentum buffer or Adam moments and step count), *ModelMix (step counter, previous
// iterate w_{k−2}), *DPSGLD (step counter, whether Init ran) and *DPMBCD (step counter, the
// lifted network's kept auxiliaries).
//
// State returns read-only views of the optimizer's buffers, valid until the next Step or
// Restore: write them out (or copy them) before stepping again. Restore copies from its
// arguments, checks every name and value first and changes nothing when it returns an error.
//
// The step counter k drives the schedule, so a restored optimizer continues at η_k, not η_0.
// Restoring the state a run saved (together with its parameters and the noise stream, see
// Noise.MarshalBinary) and continuing gives bit-identical parameters to never stopping, given
// the same batches.
//
// Restore cannot know the model's size; a restored buffer whose length differs from the
// parameter count makes the next Step return an error.
type Checkpointer interface {
	State() (vectors map[string][]float32, scalars map[string]float64)
	Restore(vectors map[string][]float32, scalars map[string]float64) error
}

// Names of the state entries, as they appear in checkpoints.
const (
	stateSteps       = "steps"            // scalar: steps taken
	stateMomentum    = "momentum"         // vector: Momentum's velocity v
	stateAdamM       = "adam_m"           // vector: Adam's first moment m
	stateAdamV       = "adam_v"           // vector: Adam's second moment v
	stateAdamT       = "adam_t"           // scalar: Adam's step count t
	statePrevIterate = "previous_iterate" // vector: ModelMix's w_{k−2}
	stateInitialised = "initialised"      // scalar: 1 if DP-SGLD's Init ran, else 0
	stateAux         = "auxiliaries"      // vector: DP-MBCD's kept hidden auxiliaries
	stateVisited     = "visited"          // vector: DP-MBCD's 0/1 mask of examples visited
)

// errOtherRun ends the messages about state that another kind of run wrote.
const errOtherRun = "it was written by a run with a different optimizer or update rule; resume with the same config"

// ruleKeys returns the vector and scalar names an update rule keeps.
func ruleKeys(r UpdateRule) (vecs, scalars []string) {
	switch r.(type) {
	case *Momentum:
		return []string{stateMomentum}, nil
	case *Adam:
		return []string{stateAdamM, stateAdamV}, []string{stateAdamT}
	}
	return nil, nil
}

// ruleState adds an update rule's buffers and counters to vecs and sc.
func ruleState(r UpdateRule, vecs map[string][]float32, sc map[string]float64) {
	switch r := r.(type) {
	case *Momentum:
		if r.v != nil {
			vecs[stateMomentum] = r.v
		}
	case *Adam:
		if r.m != nil {
			vecs[stateAdamM], vecs[stateAdamV] = r.m, r.v
		}
		sc[stateAdamT] = float64(r.t)
	}
}

// checkRuleState checks the update rule's part of a checkpoint taken after k steps: every step
// runs the rule once, so a stateful rule has its buffers from the first step on.
func checkRuleState(r UpdateRule, k int, vecs map[string][]float32, sc map[string]float64) error {
	switch r.(type) {
	case *Momentum:
		if k > 0 && len(vecs[stateMomentum]) == 0 {
			return fmt.Errorf("optim: checkpoint after %d steps has no momentum buffer: %s", k, errOtherRun)
		}
	case *Adam:
		t, err := count(sc, stateAdamT, "Adam step count")
		if err != nil {
			return err
		}
		m, v := vecs[stateAdamM], vecs[stateAdamV]
		switch {
		case len(m) != len(v):
			return fmt.Errorf("optim: checkpoint has Adam moments of lengths %d and %d, which must be equal: the checkpoint is damaged", len(m), len(v))
		case (t > 0) != (len(m) > 0):
			return fmt.Errorf("optim: checkpoint has Adam step count %d with moments of length %d: the checkpoint is damaged", t, len(m))
		case k > 0 && t == 0:
			return fmt.Errorf("optim: checkpoint after %d steps has no Adam moments: %s", k, errOtherRun)
		}
	}
	return nil
}

// restoreRule loads an update rule's state, already checked by checkRuleState.
func restoreRule(r UpdateRule, vecs map[string][]float32, sc map[string]float64) {
	switch r := r.(type) {
	case *Momentum:
		r.v = clone(vecs[stateMomentum])
	case *Adam:
		r.m, r.v, r.t = clone(vecs[stateAdamM]), clone(vecs[stateAdamV]), int(sc[stateAdamT])
	}
}

// ruleStateLen returns the length of an update rule's buffers, or -1 if it has none yet.
func ruleStateLen(r UpdateRule) int {
	switch r := r.(type) {
	case *Momentum:
		if r.v != nil {
			return len(r.v)
		}
	case *Adam:
		if r.m != nil {
			return len(r.m)
		}
	}
	return -1
}

// clone copies v; empty stays nil, so that a restored buffer is allocated by the first Apply.
func clone(v []float32) []float32 {
	if len(v) == 0 {
		return nil
	}
	return slices.Clone(v)
}

// checkNames refuses state holding entries that the optimizer kind does not have.
func checkNames(kind string, vecs map[string][]float32, sc map[string]float64, vecNames, scalarNames []string) error {
	for _, k := range slices.Sorted(maps.Keys(vecs)) {
		if !slices.Contains(vecNames, k) {
			return fmt.Errorf("optim: checkpoint holds a vector %q, which a %s optimizer does not have: %s", k, kind, errOtherRun)
		}
	}
	for _, k := range slices.Sorted(maps.Keys(sc)) {
		if !slices.Contains(scalarNames, k) {
			return fmt.Errorf("optim: checkpoint holds a value %q, which a %s optimizer does not have: %s", k, kind, errOtherRun)
		}
	}
	return nil
}

// count returns the non-negative integer scalar sc[name].
func count(sc map[string]float64, name, what string) (int, error) {
	x, ok := sc[name]
	if !ok {
		return 0, fmt.Errorf("optim: checkpoint has no %s (%q): %s", what, name, errOtherRun)
	}
	if !(x >= 0 && x <= math.MaxInt32 && x == math.Trunc(x)) {
		return 0, fmt.Errorf("optim: checkpoint's %s %v is not a non-negative integer: the checkpoint is damaged", what, x)
	}
	return int(x), nil
}

// State implements Checkpointer: "steps", and the update rule's "momentum", or "adam_m",
// "adam_v" and "adam_t".
func (o *DPSGD) State() (map[string][]float32, map[string]float64) {
	vecs, sc := map[string][]float32{}, map[string]float64{stateSteps: float64(o.k)}
	ruleState(o.cfg.Rule, vecs, sc)
	return vecs, sc
}

// Restore implements Checkpointer.
func (o *DPSGD) Restore(vecs map[string][]float32, sc map[string]float64) error {
	k, err := restoreRuleSteps("DP-SGD with update rule "+o.cfg.Rule.Name(), o.cfg.Rule, vecs, sc)
	if err != nil {
		return err
	}
	o.k = k
	return nil
}

// restoreRuleSteps checks a checkpoint holding "steps" and rule's state, restores the rule and
// returns the step count; what names the optimizer in errors.
func restoreRuleSteps(what string, rule UpdateRule, vecs map[string][]float32, sc map[string]float64) (int, error) {
	rv, rs := ruleKeys(rule)
	if err := checkNames(what, vecs, sc, rv, append(rs, stateSteps)); err != nil {
		return 0, err
	}
	k, err := count(sc, stateSteps, "step count")
	if err != nil {
		return 0, err
	}
	if err := checkRuleState(rule, k, vecs, sc); err != nil {
		return 0, err
	}
	restoreRule(rule, vecs, sc)
	return k, nil
}

// checkRuleLen returns an error if the update rule holds buffers of another length than n, as
// after restoring a checkpoint written for another model.
func (o *DPSGD) checkRuleLen(n int) error {
	if l := ruleStateLen(o.cfg.Rule); l >= 0 && l != n {
		return fmt.Errorf("optim: the %s update rule's state has length %d but the model has %d parameters: the checkpoint was written for another model", o.cfg.Rule.Name(), l, n)
	}
	return nil
}

// State implements Checkpointer: "steps" and, after the first step, "previous_iterate".
func (o *ModelMix) State() (map[string][]float32, map[string]float64) {
	vecs := map[string][]float32{}
	if o.prev != nil {
		vecs[statePrevIterate] = o.prev
	}
	return vecs, map[string]float64{stateSteps: float64(o.k)}
}

// Restore implements Checkpointer.
func (o *ModelMix) Restore(vecs map[string][]float32, sc map[string]float64) error {
	if err := checkNames("ModelMix", vecs, sc, []string{statePrevIterate}, []string{stateSteps}); err != nil {
		return err
	}
	k, err := count(sc, stateSteps, "step count")
	if err != nil {
		return err
	}
	if k > 0 && len(vecs[statePrevIterate]) == 0 {
		return fmt.Errorf("optim: ModelMix checkpoint after %d steps has no previous iterate w_{k−2} to mix with: %s", k, errOtherRun)
	}
	o.prev, o.k = clone(vecs[statePrevIterate]), k
	return nil
}

// State implements Checkpointer: "steps" and "initialised" (1 if Init ran, else 0). DP-SGLD
// keeps no vectors besides the iterate.
func (o *DPSGLD) State() (map[string][]float32, map[string]float64) {
	init := 0.0
	if o.inited {
		init = 1
	}
	return map[string][]float32{}, map[string]float64{stateSteps: float64(o.k), stateInitialised: init}
}

// Restore implements Checkpointer. The caller restores the parameters, which replace the
// initial draw: after restoring a checkpoint taken after Init, Init must not be called again.
func (o *DPSGLD) Restore(vecs map[string][]float32, sc map[string]float64) error {
	if err := checkNames("DP-SGLD", vecs, sc, nil, []string{stateSteps, stateInitialised}); err != nil {
		return err
	}
	k, err := count(sc, stateSteps, "step count")
	if err != nil {
		return err
	}
	init, err := count(sc, stateInitialised, "initialisation flag")
	if err != nil {
		return err
	}
	if init > 1 || (k > 0 && init == 0) {
		return fmt.Errorf("optim: DP-SGLD checkpoint after %d steps has initialisation flag %d: the checkpoint is damaged", k, init)
	}
	o.k, o.inited = k, init == 1
	return nil
}
