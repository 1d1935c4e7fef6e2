// Package modes maps accounting mode names, as configs and the command line give them, to the
// accountant families that implement them.
package modes

import (
	"fmt"
	"slices"
	"strings"

	"github.com/dptrain/dptrain/accounting"
	"github.com/dptrain/dptrain/accounting/convergent"
	"github.com/dptrain/dptrain/accounting/gdp"
	"github.com/dptrain/dptrain/accounting/mbcd"
	"github.com/dptrain/dptrain/accounting/modelmix"
	"github.com/dptrain/dptrain/accounting/pld"
	"github.com/dptrain/dptrain/accounting/rdp"
	"github.com/dptrain/dptrain/accounting/sgld"
	"github.com/dptrain/dptrain/accounting/ulr"
)

// Factory builds an accountant for a run, or says why its theorem does not cover the run.
type Factory func(accounting.Run) (accounting.Accountant, error)

// registry lists every mode; adding a family is one line.
var registry = map[string]Factory{
	"rdp":               func(r accounting.Run) (accounting.Accountant, error) { return rdp.New(r) },
	"gdp":               func(r accounting.Run) (accounting.Accountant, error) { return gdp.New(r) },
	"pld":               func(r accounting.Run) (accounting.Accountant, error) { return pld.New(r) },
	"modelmix":          func(r accounting.Run) (accounting.Accountant, error) { return modelmix.New(r) },
	"sgld":              func(r accounting.Run) (accounting.Accountant, error) { return sgld.New(r) },
	"sgld-conservative": func(r accounting.Run) (accounting.Accountant, error) { return sgld.NewConservative(r) },
	"mbcd":              func(r accounting.Run) (accounting.Accountant, error) { return mbcd.New(r) },
	"mbcd-certified":    func(r accounting.Run) (accounting.Accountant, error) { return mbcd.NewCertified(r) },
	"chien-li":          func(r accounting.Run) (accounting.Accountant, error) { return convergent.New(r) },
	"ulr":               func(r accounting.Run) (accounting.Accountant, error) { return ulr.New(r) },
	"ulr-simplified":    func(r accounting.Run) (accounting.Accountant, error) { return ulr.NewSimplified(r) },
	"output-perturbation": func(r accounting.Run) (accounting.Accountant, error) {
		return convergent.NewOutputPerturbation(r, false)
	},
}

// New returns the accountant called name for run.
func New(name string, run accounting.Run) (accounting.Accountant, error) {
	f, ok := registry[name]
	if !ok {
		return nil, fmt.Errorf("unknown accountant %q: want one of %s", name, strings.Join(Names(), ", "))
	}
	return f(run)
}

// Names lists the modes in alphabetical order.
func Names() []string {
	names := make([]string, 0, len(registry))
	for n := range registry {
		names = append(names, n)
	}
	slices.Sort(names)
	return names
}

// ByRelease splits names into the accountants whose theorem covers every iterate of run
// (composition: they accept run with LastIterateOnly unset) and those that bound the last
// iterate of one trajectory only (hidden-state bounds), each in the given order.
func ByRelease(names []string, run accounting.Run) (every, last []string) {
	run.LastIterateOnly = false
	for _, name := range names {
		if _, err := New(name, run); err != nil {
			last = append(last, name)
		} else {
			every = append(every, name)
		}
	}
	return every, last
}

// VoidHiddenState returns, for each of names whose bound covers the last iterate of one
// trajectory only (ByRelease), why it no longer applies to run once the data have also served
// other trajectories (why says which steps those were): the release is then not the last
// iterate of one trajectory. The composition accountants, which count every iterate, still
// hold. It returns nil when run releases every iterate, or when names has no such accountant.
func VoidHiddenState(names []string, run accounting.Run, why string) map[string]string {
	if !run.LastIterateOnly {
		return nil
	}
	every, last := ByRelease(names, run)
	count := "add a composition accountant (rdp, pld) to count every step of every branch"
	if len(every) > 0 {
		count = "the composition accountants of this run (" + strings.Join(every, ", ") + ") count every step of every branch"
	}
	var void map[string]string
	for _, name := range last {
		if void == nil {
			void = map[string]string{}
		}
		void[name] = why + ": the release is no longer the last iterate of one trajectory, which this hidden-state bound assumes; " + count
	}
	return void
}
