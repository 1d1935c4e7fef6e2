package main

import (
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/dptrain/dptrain/cmd/dptrain/internal/sweep"
	"github.com/dptrain/dptrain/data"
	"github.com/dptrain/dptrain/train"
)

// modelmixCISized shrinks benchmarks/suites/modelmix-table1.yaml to a CI-sized run (the form its
// header gives): 256 training and 128 test images (ScatterNet features of 384 images), batch 64,
// 4 steps.
var modelmixCISized = []string{"--set", "data.train_subset=256", "--set", "data.test_subset=128", "--set", "optimizer.batch_size=64",
	"--set", "training.steps=4", "--set", "training.eval_every=0", "--set", "training.checkpoint_every=0"}

// TestModelMixTable1CISized plans the ModelMix Table I suite on real Fashion-MNIST in a CI-sized
// form, runs its four rows and checks every row's ε: DP-SGD stopped at ε = 1 under RDP; ModelMix
// (plain SGD, W = 204.8 and W = 32) at ε = 1 under its paper-labelled bound with the certified
// RDP of the same noise beside it; and ModelMix with optimizer.modelmix.momentum, whose modelmix
// ε is a refusal naming momentum (never a number) while RDP, certified, meets ε = 1.
func TestModelMixTable1CISized(t *testing.T) {
	requireFashionMNIST(t, "the CI-sized modelmix-table1 sweep")
	t.Setenv(asMainEnv, "1")             // the workers are this test binary acting as dptrain
	t.Setenv(data.CacheEnv, t.TempDir()) // features of the subset are computed once, here
	dir := filepath.Join(t.TempDir(), "plan")
	args := append([]string{"sweep", "plan", "../../benchmarks/suites/modelmix-table1.yaml", "--out", dir}, modelmixCISized...)
	if _, _, err := runDptrain(t, args...); err != nil {
		t.Fatal(err)
	}
	out, _, err := runDptrain(t, "sweep", "run", dir, "--workers", "1")
	if err != nil || !strings.Contains(out, "4 ran, 0 skipped (finished before), 0 failed") {
		t.Fatalf("%v\n%s", err, out)
	}
	if _, _, err := runDptrain(t, "sweep", "collect", dir); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(filepath.Join(dir, sweep.ResultsJSON))
	if err != nil {
		t.Fatal(err)
	}
	var r sweep.Results
	if err := json.Unmarshal(b, &r); err != nil {
		t.Fatal(err)
	}
	type want struct {
		stop, label string // the accountant that met ε = 1, and its label
		refused     string // an accountant that must refuse, "" for none
	}
	rows := map[string]want{
		"dp-sgd":            {"rdp", "certified", ""},
		"modelmix":          {"modelmix", "paper", ""},
		"modelmix-w32":      {"modelmix", "paper", ""},
		"modelmix-momentum": {"rdp", "certified", "modelmix"},
	}
	seen := 0
	for _, g := range r.Groups {
		name := g.Labels[0].Value
		w, ok := rows[name]
		if !ok {
			continue
		}
		seen++
		eps := map[string]train.ModeEpsilon{}
		for _, e := range g.Epsilon {
			eps[e.Mode] = e
		}
		if e := eps[w.stop]; e.Error != "" || string(e.Label) != w.label || !(e.Epsilon > 0 && e.Epsilon <= 1) {
			t.Errorf("%s: %s ε %+v, want %s and at most the target 1", name, w.stop, e, w.label)
		}
		if e, ok := eps["rdp"]; !ok || e.Error != "" || e.Label != "certified" || !(e.Epsilon > 0) {
			t.Errorf("%s: certified RDP ε beside it: %+v", name, e)
		}
		if w.refused != "" {
			e := eps[w.refused]
			if e.Error == "" || !strings.Contains(e.Error, "momentum") || !math.IsNaN(e.Epsilon) && e.Epsilon != 0 {
				t.Errorf("%s: %s gave %+v, want a refusal naming momentum and no ε", name, w.refused, e)
			}
		}
	}
	if seen != len(rows) {
		t.Errorf("collected %d of the %d rows: %+v", seen, len(rows), r.Groups)
	}
}
