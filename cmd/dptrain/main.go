// Command dptrain trains models with differential privacy and accounts for their privacy.
//
// Run "dptrain help" for the subcommands.
package main

import (
	"fmt"
	"os"
)

func main() {
	if err := newRootCmd().Execute(); err != nil {
		fmt.Fprintln(os.Stderr, "dptrain:", err)
		os.Exit(1)
	}
}
