// Command dptrain trains models with differential privacy and accounts for their privacy.
//
// Run "dptrain help" for the subcommands.
package main

import (
	"errors"
	"fmt"
	"os"

	"github.com/spf13/cobra"
)

func main() {
	root := newRootCmd()
	root.Annotations = map[string]string{invokedKey: os.Args[0]}
	if err := root.Execute(); err != nil {
		var p *printedError
		if !errors.As(err, &p) {
			fmt.Fprintln(os.Stderr, "dptrain:", err)
		}
		var e *exitError
		if errors.As(err, &e) {
			os.Exit(e.status)
		}
		os.Exit(1)
	}
}

// invokedKey is the root command's annotation holding the program as it was started
// (os.Args[0]: bin/dptrain, ./dptrain, dptrain), so that the commands it prints to continue a
// run can be pasted as they are.
const invokedKey = "invoked"

// invoked returns the program as it was started, "dptrain" when unknown (tests).
func invoked(cmd *cobra.Command) string {
	if v := cmd.Root().Annotations[invokedKey]; v != "" {
		return v
	}
	return "dptrain"
}
