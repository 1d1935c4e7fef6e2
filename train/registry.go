package train

import (
	"github.com/dptrain/dptrain/accounting"
	"github.com/dptrain/dptrain/algorithm"
	"github.com/dptrain/dptrain/algorithm/builtin"
	"github.com/dptrain/dptrain/models"
)

// Algorithm is one private training algorithm (algorithm.Algorithm). A built-in algorithm is
// one directory under algorithm/ holding its step, its declarations, its config section, its
// checks and its registration; package builtin lists them.
type Algorithm = algorithm.Algorithm

// Env is what an algorithm's Prepare may use (algorithm.Env).
type Env = algorithm.Env

// modelFacts is what an algorithm's Prepare reads of nw (algorithm.Model).
func modelFacts(nw *models.Network) algorithm.Model {
	spec := nw.Spec()
	return algorithm.Model{Name: nw.Name(), Kind: spec.Kind, Activation: spec.Activation, NoBias: spec.NoBias,
		Params: len(nw.Params()), Layout: nw.Layout(), LinearLayers: nw.LinearLayers()}
}

// Plan is a prepared algorithm (algorithm.Plan).
type Plan = algorithm.Plan

// Algorithms is the registry of algorithms the config loader and the trainer look
// optimizer.algorithm up in: an algorithm.Algorithms (Register, Lookup, Names) with the
// config's checks and defaults on top.
type Algorithms struct {
	*algorithm.Algorithms
}

// Builtin returns a new registry holding every algorithm dptrain ships (builtin.Registry);
// Register adds one of a caller's own.
func Builtin() *Algorithms { return &Algorithms{builtin.Registry()} }

// sections decodes the algorithm sections of o (algorithm.Algorithms.Sections).
func (r *Algorithms) sections(o OptimizerConfig) (any, []error) { return r.Sections(o) }

// sectionNames lists the registered sections.
func (r *Algorithms) sectionNames() []string { return r.SectionNames() }

// algorithmConfig is what an algorithm reads of c.
func (c *Config) algorithmConfig() algorithm.Config {
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
	section, errs := r.sections(c.Optimizer)
	if len(errs) > 0 {
		return run, step, errs[0]
	}
	return a.Compare(c.algorithmConfig(), section, run, step)
}
