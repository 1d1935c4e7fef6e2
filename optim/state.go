package optim

import (
	"fmt"
	"maps"
	"slices"
)

// Checkpointer is implemented by the optimizers whose state must survive a resume: the step
// counter (which drives the schedule), the update rule's buffers, ModelMix's previous iterate.
// State returns views of the optimizer's buffers, valid until the next Step; Restore copies
// from its arguments. Restoring the state a run saved and continuing gives the same parameters
// as never stopping, given the same batches and noise.
type Checkpointer interface {
	State() (vectors map[string][]float32, scalars map[string]float64)
	Restore(vectors map[string][]float32, scalars map[string]float64) error
}

// ruleState returns an update rule's buffers and counters.
func ruleState(r UpdateRule, vecs map[string][]float32, sc map[string]float64) {
	switch r := r.(type) {
	case *Momentum:
		if r.v != nil {
			vecs["momentum"] = r.v
		}
	case *Adam:
		if r.m != nil {
			vecs["adam_m"], vecs["adam_v"] = r.m, r.v
		}
		sc["adam_t"] = float64(r.t)
	}
}

// restoreRule loads an update rule's state; buffers absent from a checkpoint taken before the
// first step are left empty, as they were.
func restoreRule(r UpdateRule, vecs map[string][]float32, sc map[string]float64) error {
	switch r := r.(type) {
	case *Momentum:
		r.v = clone(vecs["momentum"])
	case *Adam:
		m, v := vecs["adam_m"], vecs["adam_v"]
		if len(m) != len(v) {
			return fmt.Errorf("optim: checkpoint has Adam moments of lengths %d and %d: it is damaged", len(m), len(v))
		}
		if _, ok := sc["adam_t"]; !ok {
			return fmt.Errorf("optim: checkpoint has no Adam step count: it was written by a run with another update rule")
		}
		r.m, r.v, r.t = clone(m), clone(v), int(sc["adam_t"])
	}
	return nil
}

func clone(v []float32) []float32 {
	if v == nil {
		return nil
	}
	return slices.Clone(v)
}

// checkKeys refuses state written by another kind of optimizer or update rule.
func checkKeys(kind string, vecs map[string][]float32, allowed ...string) error {
	for _, k := range slices.Sorted(maps.Keys(vecs)) {
		if !slices.Contains(allowed, k) {
			return fmt.Errorf("optim: checkpoint holds %q, which a %s optimizer does not have: it was written by a run with another optimizer or update rule", k, kind)
		}
	}
	return nil
}

func steps(sc map[string]float64) (int, error) {
	k, ok := sc["steps"]
	if !ok || k < 0 || k != float64(int(k)) {
		return 0, fmt.Errorf("optim: checkpoint has no valid step count")
	}
	return int(k), nil
}

// State implements Checkpointer.
func (o *DPSGD) State() (map[string][]float32, map[string]float64) {
	vecs, sc := map[string][]float32{}, map[string]float64{"steps": float64(o.k)}
	ruleState(o.cfg.Rule, vecs, sc)
	return vecs, sc
}

// Restore implements Checkpointer.
func (o *DPSGD) Restore(vecs map[string][]float32, sc map[string]float64) error {
	if err := checkKeys("DP-SGD/"+o.cfg.Rule.Name(), vecs, "momentum", "adam_m", "adam_v"); err != nil {
		return err
	}
	k, err := steps(sc)
	if err != nil {
		return err
	}
	if err := restoreRule(o.cfg.Rule, vecs, sc); err != nil {
		return err
	}
	o.k = k
	return nil
}

// State implements Checkpointer.
func (o *ModelMix) State() (map[string][]float32, map[string]float64) {
	vecs := map[string][]float32{}
	if o.prev != nil {
		vecs["previous_iterate"] = o.prev
	}
	return vecs, map[string]float64{"steps": float64(o.k)}
}

// Restore implements Checkpointer.
func (o *ModelMix) Restore(vecs map[string][]float32, sc map[string]float64) error {
	if err := checkKeys("ModelMix", vecs, "previous_iterate"); err != nil {
		return err
	}
	k, err := steps(sc)
	if err != nil {
		return err
	}
	if k > 0 && vecs["previous_iterate"] == nil {
		return fmt.Errorf("optim: ModelMix checkpoint after %d steps has no previous iterate", k)
	}
	o.prev, o.k = clone(vecs["previous_iterate"]), k
	return nil
}

// State implements Checkpointer.
func (o *DPSGLD) State() (map[string][]float32, map[string]float64) {
	init := 0.0
	if o.inited {
		init = 1
	}
	return map[string][]float32{}, map[string]float64{"steps": float64(o.k), "initialised": init}
}

// Restore implements Checkpointer. The restored parameters replace the initial draw, so Init
// need not be called again.
func (o *DPSGLD) Restore(vecs map[string][]float32, sc map[string]float64) error {
	if err := checkKeys("DP-SGLD", vecs); err != nil {
		return err
	}
	k, err := steps(sc)
	if err != nil {
		return err
	}
	o.k, o.inited = k, sc["initialised"] == 1
	return nil
}
