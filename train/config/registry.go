package config

import (
	"bytes"
	"fmt"
	"slices"
	"strings"

	"gopkg.in/yaml.v3"

	"github.com/dptrain/dptrain/accounting"
	"github.com/dptrain/dptrain/algorithm"
	"github.com/dptrain/dptrain/algorithm/builtin"
)

// Algorithms is the registry of algorithms the config loader and the trainer look
// optimizer.algorithm up in: an algorithm.Algorithms (Register, Lookup, Names) with the
// config's checks and defaults on top.
type Algorithms struct {
	*algorithm.Algorithms
}

// Builtin returns a new registry holding every algorithm dptrain ships (builtin.Registry);
// Register adds one of a caller's own.
func Builtin() *Algorithms { return &Algorithms{builtin.Registry()} }

// Sections decodes every algorithm section present in the optimizer config strictly and
// returns the configured algorithm's (nil if it has none; its defaults if the config leaves it
// out). A key under optimizer that is neither a common key nor a registered section is an
// error.
func (r *Algorithms) Sections(o algorithm.OptimizerConfig) (any, []error) {
	var errs []error
	var own any
	a, err := r.Lookup(o.Algorithm)
	known := err == nil
	keys := make([]string, 0, len(o.Sections))
	for k := range o.Sections {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		owner, ok := r.BySection(k)
		if !ok {
			errs = append(errs, fmt.Errorf("optimizer: field %s not found (the algorithm sections are %s; see configs/quickstart.yaml for every key)", k, strings.Join(r.SectionNames(), ", ")))
			continue
		}
		v := owner.NewSection()
		if err := decodeSection(o.Sections[k], v); err != nil {
			errs = append(errs, fmt.Errorf("optimizer.%s: %w", k, err))
			continue
		}
		if known && owner.Name == a.Name {
			own = v
		}
	}
	if known && own == nil && a.NewSection != nil {
		own = a.NewSection()
	}
	return own, errs
}

// decodeSection decodes a section's generic YAML value strictly into v.
func decodeSection(section any, v any) error {
	b, err := yaml.Marshal(section)
	if err != nil {
		return err
	}
	dec := yaml.NewDecoder(bytes.NewReader(b))
	dec.KnownFields(true)
	if err := dec.Decode(v); err != nil {
		return fmt.Errorf("%w (if this is a typo, see configs/ for the algorithm's keys)", err)
	}
	return nil
}

// sectionNames lists the registered sections.
func (r *Algorithms) sectionNames() []string { return r.SectionNames() }

// AlgorithmConfig is what an algorithm reads of c.
func (c *Config) AlgorithmConfig() algorithm.Config {
	return algorithm.Config{Optimizer: c.Optimizer, Dataset: c.Data.Dataset, FeatureNorm: c.Data.FeatureNorm,
		Bias: c.Model.Bias == nil || *c.Model.Bias, Accountants: c.Privacy.Accountants, StopAccountant: c.Privacy.StopAccountant}
}

// CompareMechanism returns the run and step record with the configured algorithm's constants
// filled in, for `dptrain account compare --config`.
func (r *Algorithms) CompareMechanism(c *Config, run accounting.Run, step accounting.Step) (accounting.Run, accounting.Step, error) {
	a, err := r.Lookup(c.Optimizer.Algorithm)
	if err != nil {
		return run, step, err
	}
	if a.Compare == nil {
		return run, step, nil
	}
	section, errs := r.Sections(c.Optimizer)
	if len(errs) > 0 {
		return run, step, errs[0]
	}
	return a.Compare(c.AlgorithmConfig(), section, run, step)
}
