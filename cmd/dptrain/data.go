package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/dptrain/dptrain/cmd/dptrain/internal/datasets"
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
		Short: "List, inspect and download datasets (MNIST, Fashion-MNIST, CIFAR-10, its JPEG copy, image folders, synthetic)",
	}
	cmd.AddCommand(newDataListCmd(a), newDataInspectCmd(a), newDataDownloadCmd(a))
	return cmd
}

func newDataListCmd(a *app) *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "list",
		Short: "List the datasets known, their shapes and classes, and where each was found",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			rows, err := datasets.List(&data.Locator{})
			if err != nil {
				return err
			}
			out := dataOut(a, cmd)
			if asJSON {
				return writeJSON(out, rows)
			}
			return datasets.WriteList(out, rows)
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print a JSON array instead of a table")
	return cmd
}

func newDataInspectCmd(a *app) *cobra.Command {
	var (
		name, dir string
		classes   []string
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
			l := &data.Locator{Dir: dir, Download: download, Seed: seed, Classes: classes,
				Downloader: &data.Downloader{Progress: dataErr(a, cmd)}}
			d, err := l.Load(cmdContext(cmd), name)
			if err != nil {
				return err
			}
			r := datasets.Inspect(d)
			out := dataOut(a, cmd)
			if asJSON {
				b, err := json.Marshal(r)
				if err != nil {
					return err
				}
				_, err = fmt.Fprintf(out, "%s\n", b)
				return err
			}
			r.WriteText(out)
			return nil
		},
	}
	cmd.Flags().StringVar(&name, "dataset", "", "dataset name: mnist, fashion-mnist, cifar10, cifar10-jpeg, image-folder, synthetic-mixture, synthetic-logistic, synthetic-lowrank")
	cmd.Flags().StringVar(&dir, "dir", "", "read the files from this directory (or .tar.gz archive) only (default: the cache, then system directories)")
	cmd.Flags().StringSliceVar(&classes, "classes", nil, "image-folder: the class folders in label order, comma-separated (default: sorted)")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print one JSON object")
	cmd.Flags().BoolVar(&download, "download", false, "download the dataset if it is not found")
	cmd.Flags().Uint64Var(&seed, "seed", 0, "seed of a synthetic dataset")
	return cmd
}

func newDataDownloadCmd(a *app) *cobra.Command {
	var name, dir, baseURL, from string
	cmd := &cobra.Command{
		Use:   "download --dataset NAME [--dir DIR]",
		Short: "Download a dataset (MNIST through the Go module proxy with the go command, else its mirror), verifying SHA-256 checksums (resumable)",
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
			dl := &data.Downloader{BaseURL: baseURL, From: from, Progress: dataErr(a, cmd)}
			if err := dl.Fetch(cmdContext(cmd), spec, target); err != nil {
				return err
			}
			fmt.Fprintf(dataOut(a, cmd), "%s: %d files verified in %s\n", spec.Name, len(spec.Files), target)
			return nil
		},
	}
	cmd.Flags().StringVar(&name, "dataset", "", "dataset name: mnist, fashion-mnist, cifar10 or cifar10-jpeg")
	cmd.Flags().StringVar(&from, "from", "", "copy the dataset's files from this local folder (or, for cifar10-jpeg, its .tar.gz) instead of downloading them, checking their SHA-256")
	cmd.Flags().StringVar(&dir, "dir", "", "download into this directory (default: $"+data.CacheEnv+" or the user cache, in a DATASET folder)")
	cmd.Flags().StringVar(&baseURL, "base-url", "", "mirror to download from instead of the canonical one and of MNIST's Go module (files are still checked against the published SHA-256)")
	return cmd
}

func cmdContext(cmd *cobra.Command) context.Context {
	if ctx := cmd.Context(); ctx != nil {
		return ctx
	}
	return context.Background()
}
