package main

import (
	"encoding/json"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/dptrain/dptrain/data"
	"github.com/dptrain/dptrain/models/graph"
	"github.com/dptrain/dptrain/train"
	"github.com/dptrain/dptrain/train/config"
)

func init() { subcommands = append(subcommands, newEvalCmd) }

func newEvalCmd(a *app) *cobra.Command {
	var model, dataset, dir, normalize, configFile string
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "eval",
		Short: "Evaluate a saved model on a dataset's test split",
		Example: `  dptrain eval --model runs/quickstart/model.dpm --dataset fashion-mnist
  dptrain eval --model runs/fmnist-scatternet-cnn-dpsgd/model.dpm --config runs/fmnist-scatternet-cnn-dpsgd/config.yaml`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if model == "" || (dataset == "") == (configFile == "") {
				return fmt.Errorf("--model FILE and one of --dataset NAME or --config FILE (the run's config.yaml, for its preprocessing) are required")
			}
			nw, err := graph.Load(model)
			if err != nil {
				return err
			}
			dc, warning, err := evalData(evalRequest{Model: model, Recorded: nw.Spec().Preprocessing,
				Config: configFile, Dataset: dataset, Normalize: normalize, NormalizeSet: cmd.Flags().Changed("normalize")})
			if err != nil {
				return err
			}
			if warning != "" {
				a.log.Warn(warning)
			}
			if dir != "" {
				dc.Dir = dir
			}
			ds, _, test, err := train.LoadData(cmd.Context(), &config.Config{Data: dc}, a.log)
			if err != nil {
				return err
			}
			ds.Test, dataset = test, ds.Name
			if ds.Test.Len() == 0 {
				return fmt.Errorf("dataset %s at %s has no test split", ds.Name, ds.Source)
			}
			s, err := nw.Evaluate(data.Batch{X: ds.Test.X, Y: ds.Test.Y, N: ds.Test.N})
			if err != nil {
				return fmt.Errorf("%s on %s: %w (was the model trained on this dataset with this preprocessing? pass --config with the run's config.yaml)", model, dataset, err)
			}
			acc, loss := float64(s.Correct)/float64(s.N), s.Loss/float64(s.N)
			if asJSON {
				b, _ := json.Marshal(map[string]any{"model": model, "dataset": ds.Name, "source": ds.Source, "test": s.N, "accuracy": acc, "loss": loss})
				fmt.Fprintln(cmd.OutOrStdout(), string(b))
				return nil
			}
			fmt.Fprintf(cmd.OutOrStdout(), "%s on %s (%d test examples from %s): accuracy %.4f, loss %.4f\n", nw.Name(), ds.Name, s.N, ds.Source, acc, loss)
			return nil
		},
	}
	cmd.Flags().StringVar(&model, "model", "", "model file written by dptrain train (model.dpm)")
	cmd.Flags().StringVar(&dataset, "dataset", "", "dataset name")
	cmd.Flags().StringVar(&dir, "dir", "", "directory holding the dataset's files")
	cmd.Flags().StringVar(&normalize, "normalize", "standard", "normalisation, for models that do not record their preprocessing (older files): standard, unit or none")
	cmd.Flags().StringVar(&configFile, "config", "", "training config (e.g. the run's config.yaml): take the dataset and all its preprocessing (features included) from it")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	return cmd
}
