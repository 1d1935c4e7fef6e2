// Command dptrain trains models with differential privacy and accounts for their privacy.
//
// Run "dptrain help" for the subcommands.
package main

import (
	"errors"
	"fmt"
	"os"
)

func main() {
	if err := newRootCmd().Execute(); err != nil {
		fmt.Fprintln(os.Stderr, "dptrain:", err)
		var e *exitError
		if errors.As(err, &e) {
			os.Exit(e.status)
		}
		os.Exit(1)
	}
}
