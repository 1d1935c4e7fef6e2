package main

import (
	"fmt"
	"io"
	"os"

	"github.com/sirupsen/logrus"
	"github.com/spf13/cobra"
)

// app is what every subcommand shares: the logger configured from the global flags and the
// output streams.
type app struct {
	log       *logrus.Logger
	out, errw io.Writer

	logLevel, logFormat string
}

func newRootCmd() *cobra.Command {
	a := &app{log: logrus.New(), out: os.Stdout, errw: os.Stderr}
	root := &cobra.Command{
		Use:           "dptrain",
		Short:         "Private deep learning on CPU: train with DP-SGD and friends, account for ε live",
		SilenceUsage:  true,
		SilenceErrors: true,
		PersistentPreRunE: func(cmd *cobra.Command, args []string) error {
			return a.configureLogging()
		},
	}
	root.PersistentFlags().StringVar(&a.logLevel, "log-level", "info", "log level: debug, info, warn, error")
	root.PersistentFlags().StringVar(&a.logFormat, "log-format", "text", "log format: text or json")
	root.AddCommand(newVersionCmd(a))
	for _, add := range subcommands {
		root.AddCommand(add(a))
	}
	return root
}

// subcommands lists the constructors of the subcommands defined in other files of this
// package; each file adds its own in an init function, so that files can be added
// independently.
var subcommands []func(*app) *cobra.Command

// accountSubcommands lists the children of "dptrain account" (calibrate, compare, ...),
// registered the same way by the files that define them.
var accountSubcommands []func(*app) *cobra.Command

func (a *app) configureLogging() error {
	lvl, err := logrus.ParseLevel(a.logLevel)
	if err != nil {
		return fmt.Errorf("--log-level %q: want debug, info, warn or error", a.logLevel)
	}
	a.log.SetLevel(lvl)
	a.log.SetOutput(a.errw)
	switch a.logFormat {
	case "text":
		a.log.SetFormatter(&logrus.TextFormatter{})
	case "json":
		a.log.SetFormatter(&logrus.JSONFormatter{})
	default:
		return fmt.Errorf("--log-format %q: want text or json", a.logFormat)
	}
	return nil
}
