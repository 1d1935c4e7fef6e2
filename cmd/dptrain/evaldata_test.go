package main

import (
	"strings"
	"testing"

	"github.com/dptrain/dptrain/train/config"
)

// evalData takes the data from the config or from the model's record, refuses a request that
// contradicts the record, and warns when it has to assume the preprocessing.
func TestEvalData(t *testing.T) {
	const quick, sgld = "../../configs/quickstart.yaml", "../../configs/fmnist-logreg-dpsgld.yaml"
	cfg, err := config.LoadConfig(quick, nil)
	if err != nil {
		t.Fatal(err)
	}
	rec, err := config.PreprocessingRecord(cfg)
	if err != nil {
		t.Fatal(err)
	}
	dc, warn, err := evalData(evalRequest{Model: "m.dpm", Recorded: rec, Config: quick})
	if err != nil || warn != "" || dc.Dataset != cfg.Data.Dataset || dc.TrainSubset != 0 || dc.TestSubset != 0 {
		t.Errorf("own config: %+v, %q, %v", dc, warn, err)
	}
	if _, _, err := evalData(evalRequest{Model: "m.dpm", Recorded: rec, Config: sgld}); err == nil || !strings.Contains(err.Error(), "other inputs") {
		t.Errorf("other config: %v", err)
	}
	if dc, _, err := evalData(evalRequest{Model: "m.dpm", Recorded: rec, Dataset: cfg.Data.Dataset, Normalize: "unit"}); err != nil || dc.Normalize != cfg.Data.Normalize {
		t.Errorf("recorded, --normalize not given: %+v, %v", dc, err)
	}
	if _, _, err := evalData(evalRequest{Model: "m.dpm", Recorded: rec, Dataset: "mnist"}); err == nil || !strings.Contains(err.Error(), "pass --dataset "+cfg.Data.Dataset) {
		t.Errorf("other dataset: %v", err)
	}
	if _, _, err := evalData(evalRequest{Model: "m.dpm", Recorded: rec, Dataset: cfg.Data.Dataset, Normalize: "unit", NormalizeSet: true}); err == nil || !strings.Contains(err.Error(), "not --normalize unit") {
		t.Errorf("other normalisation: %v", err)
	}
	dc, warn, err = evalData(evalRequest{Model: "old.dpm", Dataset: "mnist", Normalize: "unit"})
	if err != nil || !strings.Contains(warn, "does not record its preprocessing") || dc.Dataset != "mnist" || dc.Normalize != "unit" {
		t.Errorf("no record: %+v, %q, %v", dc, warn, err)
	}
}
