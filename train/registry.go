package train

import (
	"bytes"
	"fmt"
	"slices"
	"strings"

	"gopkg.in/yaml.v3"

	"github.com/dptrain/dptrain/accounting"
	"github.com/dptrain/dptrain/models"
	"github.com/dptrain/dptrain/optim"
)

// Algorithm is one private training algorithm as the trainer, the config and `dptrain account
// compare --config` see it: everything about it that is not the step's mathematics (which lives
// in optim). Adding an algorithm is one file in optim and one Algorithm value added to Builtin
// (or registered on an Algorithms with Register); nothing else in train or cmd names
// algorithms.
type Algorithm struct {
	// Name is the value of optimizer.algorithm.
	Name string
	// Private is false for a non-private baseline: it takes no privacy section, no
	// noise_multiplier and no accountants.
	Private bool
	// ClipNorm says whether optimizer.clip_norm is one of its parameters (checked positive).
	ClipNorm bool
	// Sampling lists the sampling schemes (optimizer.sampling) it accepts; the first is the
	// default. Empty: every scheme, poisson by default. SamplingReason cites why others are
	// refused.
	Sampling       []string
	SamplingReason string
	// Accountants is the default of privacy.accountants.
	Accountants []string
	// PostProcessing lists the config keys (a key ending in "." stands for the keys under it)
	// that only post-process what the algorithm's steps release, as the composition
	// accountants see it: a resumed run may change them with --allow-changes (see Resumable).
	PostProcessing []string

	// Section is the key under optimizer: that holds the algorithm's own parameters, and
	// NewSection returns a pointer to them with their defaults; the section is decoded
	// strictly into it (unknown keys are errors). Both empty: no section.
	Section    string
	NewSection func() any

	// Validate returns the algorithm's own problems with a config (section is the decoded
	// section, or nil), each naming the key and the fix. It runs after the common checks.
	Validate func(c *Config, section any) []error
	// Prepare checks the run against the algorithm's assumptions and returns its plan: the
	// accounting.Run it declares and how to build its optimizer. Nothing random happens here.
	Prepare func(e Env) (Plan, error)
	// Compare fills the algorithm's part of `dptrain account compare --config`: given the run
	// and one step's record as the common config keys (and the command's flags) describe
	// them, it returns them with the algorithm's constants set. Nil: nothing to add.
	Compare func(c *Config, section any, run accounting.Run, step accounting.Step) (accounting.Run, accounting.Step, error)
}

// Env is what an algorithm's Prepare may use: the config, its decoded section, the model and
// the public facts of the run.
type Env struct {
	Config  *Config
	Section any
	Model   *models.Network
	// Classes and DatasetSize are the dataset's number of classes and n.
	Classes, DatasetSize int
	// PlannedSteps is the number of steps the run will take unless stopped early.
	PlannedSteps int
	// Schedule is the configured learning-rate schedule.
	Schedule optim.Schedule
}

// Plan is a prepared algorithm.
type Plan struct {
	// Run is the run-level declaration the accountants check. The trainer sets
	// LastIterateOnly from privacy.release, and UpdateRule from the optimizer when empty.
	Run accounting.Run
	// NewOptimizer builds the optimizer with noise multiplier sigma drawing its randomness from
	// noise. Calibration calls it with a noise source it never draws from, and asks the
	// optimizer's own Declare (optim.Declarer) for the records at each σ.
	NewOptimizer func(sigma float64, noise *optim.Noise) (optim.Optimizer, error)
	// NoAuto, when set, says why noise_multiplier auto is refused for this run.
	NoAuto string
}

// Algorithms is a registry of algorithms by name.
type Algorithms struct {
	byName map[string]Algorithm
}

// Builtin returns a new registry holding every algorithm dptrain ships.
func Builtin() *Algorithms {
	r := &Algorithms{byName: map[string]Algorithm{}}
	for _, a := range []Algorithm{dpsgdAlgorithm(), sgdAlgorithm(), dpsgldAlgorithm(), modelMixAlgorithm(), dpulrAlgorithm(), mbcdAlgorithm(true), mbcdAlgorithm(false)} {
		if err := r.Register(a); err != nil {
			panic(err) // a programming error in the list above
		}
	}
	return r
}

// Register adds a to the registry. A name or section already taken is an error.
func (r *Algorithms) Register(a Algorithm) error {
	if a.Name == "" || a.Prepare == nil {
		return fmt.Errorf("train: algorithm %q needs a name and a Prepare function", a.Name)
	}
	if _, ok := r.byName[a.Name]; ok {
		return fmt.Errorf("train: algorithm %q is already registered", a.Name)
	}
	if (a.Section == "") != (a.NewSection == nil) {
		return fmt.Errorf("train: algorithm %q: Section and NewSection go together", a.Name)
	}
	for _, b := range r.byName {
		if a.Section != "" && b.Section == a.Section {
			return fmt.Errorf("train: algorithm %q: section optimizer.%s is already used by %q", a.Name, a.Section, b.Name)
		}
	}
	if a.Section != "" && optimizerKeys()[a.Section] {
		return fmt.Errorf("train: algorithm %q: section optimizer.%s would hide a common key", a.Name, a.Section)
	}
	r.byName[a.Name] = a
	return nil
}

// Names lists the registered algorithms in alphabetical order.
func (r *Algorithms) Names() []string {
	names := make([]string, 0, len(r.byName))
	for n := range r.byName {
		names = append(names, n)
	}
	slices.Sort(names)
	return names
}

// Lookup returns the algorithm called name.
func (r *Algorithms) Lookup(name string) (Algorithm, error) {
	a, ok := r.byName[name]
	if !ok {
		return Algorithm{}, fmt.Errorf("optimizer.algorithm = %q: want %s", name, strings.Join(r.Names(), ", "))
	}
	return a, nil
}

// sections decodes every algorithm section present in the config strictly and returns the
// configured algorithm's (nil if it has none). A key under optimizer that is neither a
// common key nor a registered section is an error.
func (r *Algorithms) sections(o OptimizerConfig) (any, []error) {
	var errs []error
	var own any
	a, known := r.byName[o.Algorithm]
	keys := make([]string, 0, len(o.Sections))
	for k := range o.Sections {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		var owner *Algorithm
		for _, b := range r.byName {
			if b.Section == k {
				owner = &b
				break
			}
		}
		if owner == nil {
			errs = append(errs, fmt.Errorf("optimizer: field %s not found (the algorithm sections are %s; see configs/quickstart.yaml for every key)", k, strings.Join(r.sectionNames(), ", ")))
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

func (r *Algorithms) sectionNames() []string {
	var s []string
	for _, a := range r.byName {
		if a.Section != "" {
			s = append(s, a.Section)
		}
	}
	slices.Sort(s)
	return s
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

// optimizerKeys returns the common keys of the optimizer section (its yaml tags).
func optimizerKeys() map[string]bool {
	b, _ := yaml.Marshal(OptimizerConfig{})
	var m map[string]any
	_ = yaml.Unmarshal(b, &m)
	keys := map[string]bool{}
	for k := range m {
		keys[k] = true
	}
	return keys
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
	return a.Compare(c, section, run, step)
}
