package builtin_test

import (
	"fmt"

	"github.com/dptrain/dptrain/algorithm/builtin"
)

// Registry holds every algorithm dptrain ships. Each one's own parameters sit in a section
// under optimizer: (none for DP-SGD and sgd, whose parameters are the common keys); the
// data-parallel ones read the model only through the gradient sums that a data-parallel run
// splits across ranks; clip_norm says whether optimizer.clip_norm is one of the parameters.
func ExampleRegistry() {
	reg := builtin.Registry()
	fmt.Println("sections:", reg.SectionNames())
	for _, a := range reg.All() {
		section := "-"
		if a.Section != "" {
			section = "optimizer." + a.Section
		}
		fmt.Printf("%-8s %-18s data-parallel=%-5t clip_norm=%t\n", a.Name, section, a.DataParallel, a.ClipNorm)
	}
	// Output:
	// sections: [dp_mbcd dp_sgld dp_ulr mbcd modelmix]
	// dp-mbcd  optimizer.dp_mbcd  data-parallel=false clip_norm=true
	// dp-sgd   -                  data-parallel=true  clip_norm=true
	// dp-sgld  optimizer.dp_sgld  data-parallel=true  clip_norm=false
	// dp-ulr   optimizer.dp_ulr   data-parallel=false clip_norm=true
	// mbcd     optimizer.mbcd     data-parallel=false clip_norm=false
	// modelmix optimizer.modelmix data-parallel=true  clip_norm=true
	// sgd      -                  data-parallel=true  clip_norm=false
}
