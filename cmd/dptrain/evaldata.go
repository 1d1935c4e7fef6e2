package main

import (
	"fmt"
	"strings"

	"github.com/dptrain/dptrain/train/config"
)

// evalRequest is what "dptrain eval" is told about the data to evaluate a saved model on.
type evalRequest struct {
	// Model is the model file, Recorded the preprocessing it records (nil for a file written
	// before models recorded it).
	Model    string
	Recorded map[string]string
	// Config is the training config to take the data from ("" for none); Dataset and
	// Normalize are the dataset and normalisation given instead, NormalizeSet whether the
	// normalisation was given explicitly.
	Config, Dataset, Normalize string
	NormalizeSet               bool
}

// evalData decides the data a saved model is evaluated on: the config's, which must prepare
// the inputs as the model records; else the model's recorded preprocessing, whose dataset and
// normalisation the request must not contradict (an accuracy on other inputs would mean
// nothing); else, for a model that records none, the requested dataset and normalisation,
// with a warning that they are assumed. The subsets are dropped: the whole test split is used.
func evalData(r evalRequest) (dc config.DataConfig, warning string, err error) {
	rec := r.Recorded
	switch {
	case r.Config != "":
		cfg, err := config.LoadConfig(r.Config, nil)
		if err != nil {
			return dc, "", err
		}
		if rec != nil {
			given, err := config.PreprocessingRecord(cfg)
			if err != nil {
				return dc, "", err
			}
			if diff := config.PreprocessingDiff(rec, given); len(diff) > 0 {
				return dc, "", fmt.Errorf("%s was trained with other inputs than %s prepares (recorded in the model → in the config):\n  %s\nevaluate with the model's own run config, or with --dataset %s alone", r.Model, r.Config, strings.Join(diff, "\n  "), rec["data.dataset"])
			}
		}
		dc = cfg.Data
	case rec != nil:
		if dc, err = config.DataFromRecord(rec); err != nil {
			return dc, "", fmt.Errorf("%s: %w", r.Model, err)
		}
		if r.Dataset != dc.Dataset {
			return dc, "", fmt.Errorf("%s was trained on %s (the file records it): its accuracy on %s would mean nothing; pass --dataset %s", r.Model, dc.Dataset, r.Dataset, dc.Dataset)
		}
		if r.NormalizeSet && r.Normalize != dc.Normalize {
			return dc, "", fmt.Errorf("%s was trained with data.normalize %s (the file records it), not --normalize %s: leave --normalize out, the recorded preprocessing is used", r.Model, dc.Normalize, r.Normalize)
		}
	default:
		warning = fmt.Sprintf("%s does not record its preprocessing (written by an older dptrain): assuming --dataset %s with --normalize %s and no features; if the model was trained otherwise, pass --config with the run's config.yaml", r.Model, r.Dataset, r.Normalize)
		dc = config.DataConfig{Dataset: r.Dataset, Normalize: r.Normalize}
	}
	dc.TrainSubset, dc.TestSubset = 0, 0
	return dc, warning, nil
}
