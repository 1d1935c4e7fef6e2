package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"text/tabwriter"

	"github.com/dptrain/dptrain/data"
	"github.com/spf13/cobra"
)

func init() { subcommands = append(subcommands, newDataCmd) }

// dataOut is where a data subcommand prints: the app's stdout, or the command's when a test
// redirected it with SetOut.
func dataOut(a *app, cmd *cobra.Command) io.Writer {
	if a.out != os.Stdout {
		return a.out
	}
	return cmd.OutOrStdout()
}

func dataErr(a *app, cmd *cobra.Command) io.Writer {
	if a.errw != os.Stderr {
		return a.errw
	}
	return cmd.ErrOrStderr()
}

func newDataCmd(a *app) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "data",
		Short: "List, inspect and download datasets (MNIST, Fashion-MNIST, CIFAR-10, synthetic)",
	}
	cmd.AddCommand(newDataListCmd(a), newDataInspectCmd(a), newDataDownloadCmd(a))
	return cmd
}

// dataListEntry is one row of "dptrain data list".
type dataListEntry struct {
	Dataset string `json:"dataset"`
	Shape   []int  `json:"shape"`
	Classes int    `json:"classes"`
	Train   int    `json:"train"`
	Test    int    `json:"test"`
	Found   bool   `json:"found"`
	Source  string `json:"source"`
}

func newDataListCmd(a *app) *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "list",
		Short: "List the datasets known, their shapes and classes, and where each was found",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			l := &data.Locator{}
			var rows []dataListEntry
			for _, s := range data.Known() {
				e := dataListEntry{Dataset: s.Name, Shape: s.Shape, Classes: s.Classes, Train: s.TrainSize, Test: s.TestSize}
				loc, err := l.Find(s.Name)
				switch {
				case err == nil:
					e.Found, e.Source = true, loc.String()
				case errors.Is(err, os.ErrNotExist):
					e.Source = "not found (dptrain data download --dataset " + s.Name + ")"
				default:
					return err
				}
				rows = append(rows, e)
			}
			out := dataOut(a, cmd)
			if asJSON {
				enc := json.NewEncoder(out)
				enc.SetIndent("", "  ")
				return enc.Encode(rows)
			}
			tw := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "DATASET\tSHAPE\tCLASSES\tTRAIN\tTEST\tWHERE")
			for _, e := range rows {
				fmt.Fprintf(tw, "%s\t%s\t%d\t%d\t%d\t%s\n", e.Dataset, shapeString(e.Shape), e.Classes, e.Train, e.Test, e.Source)
			}
			return tw.Flush()
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print a JSON array instead of a table")
	return cmd
}

// dataInspectReport is what "dptrain data inspect --json" prints.
type dataInspectReport struct {
	Dataset       string   `json:"dataset"`
	Train         int      `json:"train"`
	Test          int      `json:"test"`
	Shape         []int    `json:"shape"`
	Features      int      `json:"features"`
	Classes       int      `json:"classes"`
	Source        string   `json:"source"`
	Preprocessing []string `json:"preprocessing"`
	TrainClasses  []int    `json:"train_class_counts,omitempty"`
	TestClasses   []int    `json:"test_class_counts,omitempty"`
}

func newDataInspectCmd(a *app) *cobra.Command {
	var (
		name, dir string
		asJSON    bool
		download  bool
		seed      uint64
	)
	cmd := &cobra.Command{
		Use:   "inspect --dataset NAME [--dir DIR] [--json]",
		Short: "Load a dataset and print its sizes, shape, classes and where it was found",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if name == "" {
				return errors.New("data inspect: --dataset is required (see dptrain data list)")
			}
			l := &data.Locator{Dir: dir, Download: download, Seed: seed,
				Downloader: &data.Downloader{Progress: dataErr(a, cmd)}}
			d, err := l.Load(cmdContext(cmd), name)
			if err != nil {
				return err
			}
			r := dataInspectReport{Dataset: d.Name, Train: d.Train.Len(), Test: d.Test.Len(), Shape: d.Shape,
				Features: d.Dim(), Classes: d.Classes, Source: d.Source, Preprocessing: d.Preprocessing}
			if r.Preprocessing == nil {
				r.Preprocessing = []string{}
			}
			if d.Classes > 0 {
				if d.Train != nil {
					r.TrainClasses = d.Train.ClassCounts(d.Classes)
				}
				if d.Test != nil {
					r.TestClasses = d.Test.ClassCounts(d.Classes)
				}
			}
			out := dataOut(a, cmd)
			if asJSON {
				b, err := json.Marshal(r)
				if err != nil {
					return err
				}
				_, err = fmt.Fprintf(out, "%s\n", b)
				return err
			}
			fmt.Fprintf(out, "dataset:  %s\n", r.Dataset)
			fmt.Fprintf(out, "train:    %d examples%s\n", r.Train, emptyNote(d.Train))
			fmt.Fprintf(out, "test:     %d examples%s\n", r.Test, emptyNote(d.Test))
			fmt.Fprintf(out, "shape:    %s (%d features)\n", shapeString(r.Shape), r.Features)
			fmt.Fprintf(out, "classes:  %d\n", r.Classes)
			if r.TrainClasses != nil {
				fmt.Fprintf(out, "train per class: %s\n", intsString(r.TrainClasses))
			}
			if r.TestClasses != nil {
				fmt.Fprintf(out, "test per class:  %s\n", intsString(r.TestClasses))
			}
			fmt.Fprintf(out, "preprocessing: %s\n", strings.Join(r.Preprocessing, ", "))
			fmt.Fprintf(out, "source:   %s\n", r.Source)
			return nil
		},
	}
	cmd.Flags().StringVar(&name, "dataset", "", "dataset name: mnist, fashion-mnist, cifar10, synthetic-mixture, synthetic-logistic, synthetic-lowrank")
	cmd.Flags().StringVar(&dir, "dir", "", "read the files from this directory only (default: the cache, then system directories)")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print one JSON object")
	cmd.Flags().BoolVar(&download, "download", false, "download the dataset if it is not found")
	cmd.Flags().Uint64Var(&seed, "seed", 0, "seed of a synthetic dataset")
	return cmd
}

func newDataDownloadCmd(a *app) *cobra.Command {
	var name, dir, baseURL string
	cmd := &cobra.Command{
		Use:   "download --dataset NAME [--dir DIR]",
		Short: "Download a dataset from its canonical mirror, verifying SHA-256 checksums (resumable)",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if name == "" {
				return errors.New("data download: --dataset is required (see dptrain data list)")
			}
			spec, err := data.Lookup(name)
			if err != nil {
				return err
			}
			l := &data.Locator{Dir: dir}
			target, err := l.DownloadDir(spec)
			if err != nil {
				return err
			}
			dl := &data.Downloader{BaseURL: baseURL, Progress: dataErr(a, cmd)}
			if err := dl.Fetch(cmdContext(cmd), spec, target); err != nil {
				return err
			}
			fmt.Fprintf(dataOut(a, cmd), "%s: %d files verified in %s\n", spec.Name, len(spec.Files), target)
			return nil
		},
	}
	cmd.Flags().StringVar(&name, "dataset", "", "dataset name: mnist, fashion-mnist or cifar10")
	cmd.Flags().StringVar(&dir, "dir", "", "download into this directory (default: $"+data.CacheEnv+" or the user cache, in a DATASET folder)")
	cmd.Flags().StringVar(&baseURL, "base-url", "", "mirror to download from instead of the canonical one (files are still checked against the published SHA-256)")
	return cmd
}

func cmdContext(cmd *cobra.Command) context.Context {
	if ctx := cmd.Context(); ctx != nil {
		return ctx
	}
	return context.Background()
}

func shapeString(s []int) string {
	parts := make([]string, len(s))
	for i, v := range s {
		parts[i] = fmt.Sprint(v)
	}
	return "[" + strings.Join(parts, ",") + "]"
}

func intsString(v []int) string {
	parts := make([]string, len(v))
	for i, x := range v {
		parts[i] = fmt.Sprint(x)
	}
	return strings.Join(parts, " ")
}

func emptyNote(s *data.Split) string {
	if s == nil {
		return " (none in this source)"
	}
	return ""
}
