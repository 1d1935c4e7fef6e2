package config

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"maps"
	"slices"
	"strings"

	"gopkg.in/yaml.v3"
)

// Canonical is a config flattened to its keys (dotted paths such as optimizer.learning_rate)
// with defaults applied and empty values left out, so that a config file, its re-serialised
// copy in the run directory (where absent keys are written as 0, "" or []) and the same run
// given through --set all have the same canonical form.
type Canonical map[string]string

// Canonicalize flattens cfg. cfg must already hold its defaults.
func Canonicalize(cfg *Config) (Canonical, error) {
	c := *cfg
	if c.Model.Bias == nil { // absent means the default, biases on
		on := true
		c.Model.Bias = &on
	}
	b, err := yaml.Marshal(&c)
	if err != nil {
		return nil, fmt.Errorf("config: %w", err)
	}
	var tree map[string]any
	if err := yaml.Unmarshal(b, &tree); err != nil {
		return nil, fmt.Errorf("config: %w", err)
	}
	out := Canonical{}
	flatten("", tree, out)
	return out, nil
}

func flatten(prefix string, v any, out Canonical) {
	switch x := v.(type) {
	case nil:
	case map[string]any:
		for k, e := range x {
			key := k
			if prefix != "" {
				key = prefix + "." + k
			}
			flatten(key, e, out)
		}
	case []any:
		scalars := true
		for _, e := range x {
			switch e.(type) {
			case map[string]any, []any:
				scalars = false
			}
		}
		if scalars {
			if len(x) > 0 {
				parts := make([]string, len(x))
				for i, e := range x {
					parts[i] = fmt.Sprint(e)
				}
				out[prefix] = "[" + strings.Join(parts, ", ") + "]"
			}
			return
		}
		for i, e := range x {
			flatten(fmt.Sprintf("%s[%d]", prefix, i), e, out)
		}
	case string:
		if x != "" {
			out[prefix] = x
		}
	case bool:
		if x {
			out[prefix] = "true"
		}
	case int:
		if x != 0 {
			out[prefix] = fmt.Sprint(x)
		}
	case float64:
		if x != 0 {
			out[prefix] = fmt.Sprint(x)
		}
	default:
		out[prefix] = fmt.Sprint(x)
	}
}

// Resumable says how a key may change between a checkpoint and the run that resumes it.
type Resumable int

const (
	// Fixed keys change the privacy accounting or the data: a resumed run must keep them.
	Fixed Resumable = iota
	// Free keys are cadences, names and places (evaluation, logging, checkpoint cadence,
	// output.dir, data.dir, data.path): they never change what the run computes.
	Free
	// Changeable keys steer the trajectory but not what the accountants see (the learning
	// rate of DP-SGD, its schedule, the update rule's constants, the run's length): they may
	// change on resume with --allow-changes, and the change is logged and recorded.
	Changeable
)

// compositionModes are the accountants that read only the noise, the sampling and the
// sensitivity of each step, never its step size.
var compositionModes = []string{"rdp", "pld", "gdp"}

// resumable classifies a canonical key for a run of cfg with the algorithms of algs.
func resumable(key string, cfg *Config, algs *Algorithms) Resumable {
	if isFree(key) {
		return Free
	}
	// The algorithm's post-processing keys may change, with composition accountants only:
	// the ledger holds what every step released, whatever the run's length. Other
	// accountants read the step size or the planned steps (Ryffel, Bach & Pointcheval's Theorem 3.1,
	// Xiao, Wan & Devadas's Theorem 4.1, Chien & Li's shifted divergences): there, every key is fixed.
	alg, err := algs.Lookup(cfg.Optimizer.Algorithm)
	if err != nil {
		return Fixed
	}
	for _, m := range cfg.Privacy.Accountants {
		if !slices.Contains(compositionModes, m) {
			return Fixed
		}
	}
	for _, k := range alg.PostProcessing {
		if key == k || strings.HasSuffix(k, ".") && strings.HasPrefix(key, k) {
			return Changeable
		}
	}
	return Fixed
}

// isFree reports the keys that never change what a run computes.
func isFree(key string) bool {
	switch key {
	case "name", "output.dir", "data.dir", "data.path", "data.test_subset",
		"training.eval_every", "training.checkpoint_every", "training.log_every",
		"training.privacy_every", "training.keep_checkpoints":
		return true
	}
	return false
}

// Hash identifies the keys that a resumed run must share with the run that wrote the
// checkpoint (every key but the Free ones).
func (c Canonical) Hash() string {
	h := sha256.New()
	for _, k := range slices.Sorted(maps.Keys(c)) {
		if isFree(k) {
			continue
		}
		fmt.Fprintf(h, "%s=%s\n", k, c[k])
	}
	return hex.EncodeToString(h.Sum(nil)[:8])
}

// KeyChange is one key whose value differs between two canonical configs.
type KeyChange struct {
	Key      string
	Old, New string // "" when absent (the default)
	Kind     Resumable
}

func (k KeyChange) String() string {
	show := func(s string) string {
		if s == "" {
			return "(absent)"
		}
		return s
	}
	return fmt.Sprintf("%s: %s → %s", k.Key, show(k.Old), show(k.New))
}

// Diff lists the keys whose values differ from old to c, sorted by key, Free keys excluded;
// cfg is the new run's config and algs its algorithms, which decide what may change.
func (c Canonical) Diff(old Canonical, cfg *Config, algs *Algorithms) []KeyChange {
	keys := map[string]bool{}
	for k := range c {
		keys[k] = true
	}
	for k := range old {
		keys[k] = true
	}
	var out []KeyChange
	for _, k := range slices.Sorted(maps.Keys(keys)) {
		if c[k] == old[k] {
			continue
		}
		if r := resumable(k, cfg, algs); r != Free {
			out = append(out, KeyChange{Key: k, Old: old[k], New: c[k], Kind: r})
		}
	}
	return out
}
