package algorithm

import (
	"fmt"
	"math"
	"reflect"
	"slices"
	"strings"

	"github.com/dptrain/dptrain/accounting"
	"github.com/dptrain/dptrain/layer"
	"github.com/dptrain/dptrain/optim"
)

// Algorithm is one private training algorithm as the trainer, the config and `dptrain account
// compare --config` see it: its name, what it accepts of the config, its own section and how
// to prepare its optimizer. Each built-in algorithm returns its Algorithm from its own package
// (dpsgd.Algorithm, modelmix.Algorithm, ...); package builtin registers them.
type Algorithm struct {
	// Name is the value of optimizer.algorithm.
	Name string
	// Private is false for a non-private baseline: it takes no privacy section, no
	// noise_multiplier and no accountants.
	Private bool
	// ClipNorm says whether optimizer.clip_norm is one of its parameters (checked positive).
	ClipNorm bool
	// DataParallel says whether its step reads the model only through the gradient sums of
	// optim.GradientOracle (ClippedGradSum, PerSampleGradSum), which a data-parallel run
	// splits across ranks (train.Options.Comm); the others run as one process.
	DataParallel bool
	// Sampling lists the sampling schemes (optimizer.sampling) it accepts; the first is the
	// default. Empty: every scheme, poisson by default. SamplingReason cites why others are
	// refused.
	Sampling       []string
	SamplingReason string
	// Accountants is the default of privacy.accountants.
	Accountants []string
	// PostProcessing lists the config keys (a key ending in "." stands for the keys under it)
	// that only post-process what the algorithm's steps release, as the composition
	// accountants see it: a resumed run may change them with --allow-changes.
	PostProcessing []string

	// Section is the key under optimizer: that holds the algorithm's own parameters, and
	// NewSection returns a pointer to them with their defaults; the trainer decodes the section
	// strictly into it (unknown keys are errors). Both empty: no section.
	Section    string
	NewSection func() any

	// Validate returns the algorithm's own problems with a config (section is the decoded
	// section, or nil), each naming the key and the fix. It runs after the common checks.
	Validate func(c Config, section any) []error
	// Prepare checks the run against the algorithm's assumptions and returns its plan: the
	// accounting.Run it declares and how to build its optimizer. Nothing random happens here.
	Prepare func(e Env) (Plan, error)
	// Compare fills the algorithm's part of `dptrain account compare --config`: given the run
	// and one step's record as the common config keys (and the command's flags) describe
	// them, it returns them with the algorithm's constants set. Nil: nothing to add.
	Compare func(c Config, section any, run accounting.Run, step accounting.Step) (accounting.Run, accounting.Step, error)
}

// Env is what an algorithm's Prepare may use: the config, its decoded section, the model's
// architecture and the public facts of the run.
type Env struct {
	Config  Config
	Section any
	Model   Model
	// Classes and DatasetSize are the dataset's number of classes and n.
	Classes, DatasetSize int
	// PlannedSteps is the number of steps the run will take unless stopped early.
	PlannedSteps int
	// Schedule is the configured learning-rate schedule.
	Schedule optim.Schedule
	// Warnf, when not nil, logs a warning the operator sees (operator-only: it may describe private data).
	Warnf func(format string, args ...any)
}

// Model is what an algorithm's Prepare may read of the run's model: public facts of its
// architecture, which the trainer takes from the network it built (package models).
type Model struct {
	// Name names the model in messages.
	Name string
	// Kind is model.kind (logreg, mlp, cnn, ...), Activation the hidden layers' activation
	// (relu, tanh, gelu), and NoBias says a logreg or mlp has no biases (model.bias false).
	Kind, Activation string
	NoBias           bool
	// Layout lists the parameter tensors in the flat vector, in order.
	Layout []layer.Param
	// LinearLayers lists the dense and conv layers in forward order as a forward-only
	// estimator sees them; conv layers with standardised weights are left out.
	LinearLayers []layer.Linear
}

// Params is the number of parameters: the length of the flat parameter vector, which Layout
// covers.
func (m Model) Params() int {
	n := 0
	for _, p := range m.Layout {
		n += p.Size
	}
	return n
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

// NewAlgorithms returns a registry holding algs, in order; it panics if one cannot be
// registered (see Register), a programming error in the list.
func NewAlgorithms(algs ...Algorithm) *Algorithms {
	r := &Algorithms{byName: map[string]Algorithm{}}
	for _, a := range algs {
		if err := r.Register(a); err != nil {
			panic(err)
		}
	}
	return r
}

// Register adds a to the registry. A name or section already taken is an error.
func (r *Algorithms) Register(a Algorithm) error {
	if a.Name == "" || a.Prepare == nil {
		return fmt.Errorf("algorithm %q needs a name and a Prepare function", a.Name)
	}
	if r.byName == nil {
		r.byName = map[string]Algorithm{}
	}
	if _, ok := r.byName[a.Name]; ok {
		return fmt.Errorf("algorithm %q is already registered", a.Name)
	}
	if (a.Section == "") != (a.NewSection == nil) {
		return fmt.Errorf("algorithm %q: Section and NewSection go together", a.Name)
	}
	for _, b := range r.byName {
		if a.Section != "" && b.Section == a.Section {
			return fmt.Errorf("algorithm %q: section optimizer.%s is already used by %q", a.Name, a.Section, b.Name)
		}
	}
	if a.Section != "" && optimizerKeys()[a.Section] {
		return fmt.Errorf("algorithm %q: section optimizer.%s would hide a common key", a.Name, a.Section)
	}
	r.byName[a.Name] = a
	return nil
}

// Names lists the registered algorithms in alphabetical order.
func (r *Algorithms) Names() []string {
	names := make([]string, 0, len(r.All()))
	for _, a := range r.All() {
		names = append(names, a.Name)
	}
	return names
}

// All returns the registered algorithms in alphabetical order of their names (none for a nil
// registry).
func (r *Algorithms) All() []Algorithm {
	if r == nil {
		return nil
	}
	all := make([]Algorithm, 0, len(r.byName))
	for _, a := range r.byName {
		all = append(all, a)
	}
	slices.SortFunc(all, func(a, b Algorithm) int { return strings.Compare(a.Name, b.Name) })
	return all
}

// Lookup returns the algorithm called name.
func (r *Algorithms) Lookup(name string) (Algorithm, error) {
	if r != nil {
		if a, ok := r.byName[name]; ok {
			return a, nil
		}
	}
	return Algorithm{}, fmt.Errorf("optimizer.algorithm = %q: want %s", name, strings.Join(r.Names(), ", "))
}

// BySection returns the algorithm whose section is called key.
func (r *Algorithms) BySection(key string) (Algorithm, bool) {
	for _, a := range r.All() {
		if key != "" && a.Section == key {
			return a, true
		}
	}
	return Algorithm{}, false
}

// SectionNames lists the registered algorithms' sections in alphabetical order.
func (r *Algorithms) SectionNames() []string {
	var s []string
	for _, a := range r.All() {
		if a.Section != "" {
			s = append(s, a.Section)
		}
	}
	slices.Sort(s)
	return s
}

// optimizerKeys returns the common keys of the optimizer section (its fields' yaml tags).
func optimizerKeys() map[string]bool {
	keys := map[string]bool{}
	t := reflect.TypeFor[OptimizerConfig]()
	for i := range t.NumField() {
		if name, _, _ := strings.Cut(t.Field(i).Tag.Get("yaml"), ","); name != "" && name != "-" {
			keys[name] = true
		}
	}
	return keys
}

// UpdateRule builds the post-processing rule the config applies to the privatised gradient
// (optimizer.update and its constants).
func UpdateRule(o OptimizerConfig) (optim.UpdateRule, error) {
	switch o.Update {
	case "momentum", "nesterov":
		return optim.NewMomentum(o.Momentum, o.Update == "nesterov", o.WeightDecay)
	case "adam":
		return optim.NewAdam(o.Beta1, o.Beta2, o.AdamEps, o.WeightDecay, true)
	default:
		return optim.NewSGD(o.WeightDecay)
	}
}

// Positive returns an error naming key unless v is a positive finite number.
func Positive(key string, v float64) error {
	if !(v > 0) || math.IsInf(v, 0) {
		return fmt.Errorf("%s = %v: must be a positive number", key, v)
	}
	return nil
}

// ClipNormRun is the declaration of a run whose per-example gradients are clipped to
// optimizer.clip_norm and whose loss is assumed nothing about: the composition accountants
// need no more.
func ClipNormRun(e Env) accounting.Run {
	return accounting.Run{DatasetSize: e.DatasetSize, Convexity: accounting.NonConvex, Lipschitz: e.Config.Optimizer.ClipNorm}
}

// UpdateKeys are the keys that only post-process a privatised gradient whose records carry no
// step size (DP-SGD's, DP-ULR's): the learning rate, its schedule, the update rule's constants
// and the run's length.
var UpdateKeys = []string{"optimizer.learning_rate", "optimizer.schedule.", "optimizer.momentum", "optimizer.beta1",
	"optimizer.beta2", "optimizer.adam_eps", "optimizer.weight_decay", "training.epochs", "training.steps"}
