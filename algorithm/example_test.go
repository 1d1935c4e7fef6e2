package algorithm_test

import (
	"fmt"
	"strings"

	"github.com/dptrain/dptrain/algorithm"
	"github.com/dptrain/dptrain/algorithm/builtin"
	"github.com/dptrain/dptrain/algorithm/dpsgd"
)

// Looking up the built-in algorithms (package builtin) by name, as the trainer does with
// optimizer.algorithm: each one says whether it is private, which accountants
// privacy.accountants defaults to, and which sampling schemes optimizer.sampling accepts (the
// first is the default; "any": every scheme, poisson by default).
func Example() {
	reg := builtin.Registry()
	for _, name := range reg.Names() {
		a, err := reg.Lookup(name)
		if err != nil {
			panic(err)
		}
		accountants, sampling := "none", "any"
		if len(a.Accountants) > 0 {
			accountants = strings.Join(a.Accountants, " ")
		}
		if len(a.Sampling) > 0 {
			sampling = strings.Join(a.Sampling, " ")
		}
		fmt.Printf("%-8s private=%-5t accountants: %-20s sampling: %s\n", a.Name, a.Private, accountants, sampling)
	}
	// Output:
	// dp-mbcd  private=true  accountants: mbcd mbcd-certified  sampling: shuffled-once
	// dp-sgd   private=true  accountants: rdp pld              sampling: any
	// dp-sgld  private=true  accountants: sgld rdp             sampling: without-replacement
	// dp-ulr   private=true  accountants: ulr                  sampling: poisson-with-rejection
	// mbcd     private=false accountants: none                 sampling: shuffled-once
	// modelmix private=true  accountants: modelmix rdp         sampling: poisson
	// sgd      private=false accountants: none                 sampling: shuffled poisson shuffled-once without-replacement poisson-with-rejection
}

// A registry of one's own: NewAlgorithms holds the algorithms it is given, here DP-SGD (Abadi
// et al., "Deep Learning with Differential Privacy") and its non-private baseline, and Lookup
// names the registered ones when asked for another.
func ExampleNewAlgorithms() {
	reg := algorithm.NewAlgorithms(dpsgd.Algorithm(), dpsgd.Baseline())
	fmt.Println(reg.Names())
	if _, err := reg.Lookup("modelmix"); err != nil {
		fmt.Println(err)
	}
	// Output:
	// [dp-sgd sgd]
	// optimizer.algorithm = "modelmix": want dp-sgd, sgd
}
