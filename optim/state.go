package optim

import (
	"fmt"
	"maps"
	"math"
	"slices"
)

// Checkpointer is implemented by the optimizers whose state must survive a resume: every
// built-in algorithm's (algorithm/...) keeps its step counter, and DP-SGD's and DP-ULR's their
// update rule's momentum buffer or Adam moments and step count, ModelMix's its previous iterate
// w_{k−2}, DP-SGLD's whether Init ran and DP-MBCD's the lifted network's kept auxiliaries.
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

// Names of the state entries shared by the optimizers and their update rules, as they appear
// in checkpoints; an algorithm names its own entries in its package.
const (
	StateSteps    = "steps"    // scalar: steps taken
	stateMomentum = "momentum" // vector: Momentum's velocity v
	stateAdamM    = "adam_m"   // vector: Adam's first moment m
	stateAdamV    = "adam_v"   // vector: Adam's second moment v
	stateAdamT    = "adam_t"   // scalar: Adam's step count t
)

// OtherRunHint ends the messages about state that another kind of run wrote.
const OtherRunHint = "it was written by a run with a different optimizer or update rule; resume with the same config"

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

// RuleState adds an update rule's buffers and counters to vecs and sc.
func RuleState(r UpdateRule, vecs map[string][]float32, sc map[string]float64) {
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
			return fmt.Errorf("optim: checkpoint after %d steps has no momentum buffer: %s", k, OtherRunHint)
		}
	case *Adam:
		t, err := StateCount(sc, stateAdamT, "Adam step count")
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
			return fmt.Errorf("optim: checkpoint after %d steps has no Adam moments: %s", k, OtherRunHint)
		}
	}
	return nil
}

// restoreRule loads an update rule's state, already checked by checkRuleState.
func restoreRule(r UpdateRule, vecs map[string][]float32, sc map[string]float64) {
	switch r := r.(type) {
	case *Momentum:
		r.v = CloneState(vecs[stateMomentum])
	case *Adam:
		r.m, r.v, r.t = CloneState(vecs[stateAdamM]), CloneState(vecs[stateAdamV]), int(sc[stateAdamT])
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

// CloneState copies v; empty stays nil, so that a restored buffer is allocated by the first Apply.
func CloneState(v []float32) []float32 {
	if len(v) == 0 {
		return nil
	}
	return slices.Clone(v)
}

// CheckStateNames refuses state holding entries that the optimizer kind does not have.
func CheckStateNames(kind string, vecs map[string][]float32, sc map[string]float64, vecNames, scalarNames []string) error {
	for _, k := range slices.Sorted(maps.Keys(vecs)) {
		if !slices.Contains(vecNames, k) {
			return fmt.Errorf("optim: checkpoint holds a vector %q, which a %s optimizer does not have: %s", k, kind, OtherRunHint)
		}
	}
	for _, k := range slices.Sorted(maps.Keys(sc)) {
		if !slices.Contains(scalarNames, k) {
			return fmt.Errorf("optim: checkpoint holds a value %q, which a %s optimizer does not have: %s", k, kind, OtherRunHint)
		}
	}
	return nil
}

// StateCount returns the non-negative integer scalar sc[name].
func StateCount(sc map[string]float64, name, what string) (int, error) {
	x, ok := sc[name]
	if !ok {
		return 0, fmt.Errorf("optim: checkpoint has no %s (%q): %s", what, name, OtherRunHint)
	}
	if !(x >= 0 && x <= math.MaxInt32 && x == math.Trunc(x)) {
		return 0, fmt.Errorf("optim: checkpoint's %s %v is not a non-negative integer: the checkpoint is damaged", what, x)
	}
	return int(x), nil
}

// RestoreRuleSteps checks a checkpoint holding "steps" and rule's state, restores the rule and
// returns the step count; what names the optimizer in errors.
func RestoreRuleSteps(what string, rule UpdateRule, vecs map[string][]float32, sc map[string]float64) (int, error) {
	rv, rs := ruleKeys(rule)
	if err := CheckStateNames(what, vecs, sc, rv, append(rs, StateSteps)); err != nil {
		return 0, err
	}
	k, err := StateCount(sc, StateSteps, "step count")
	if err != nil {
		return 0, err
	}
	if err := checkRuleState(rule, k, vecs, sc); err != nil {
		return 0, err
	}
	restoreRule(rule, vecs, sc)
	return k, nil
}

// CheckRuleLen returns an error if the update rule holds buffers of another length than n, as
// after restoring a checkpoint written for another model.
func CheckRuleLen(r UpdateRule, n int) error {
	if l := ruleStateLen(r); l >= 0 && l != n {
		return fmt.Errorf("optim: the %s update rule's state has length %d but the model has %d parameters: the checkpoint was written for another model", r.Name(), l, n)
	}
	return nil
}
