package main

import (
	"bytes"
	"encoding/json"
	"image/png"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/dptrain/dptrain/accounting/compare"
	"github.com/sirupsen/logrus"
)

func runCompareCmd(t *testing.T, args ...string) (string, error) {
	t.Helper()
	var out, errw bytes.Buffer
	a := &app{log: logrus.New(), out: &out, errw: &errw}
	cmd := newAccountCompareCmd(a)
	cmd.SetArgs(args)
	cmd.SetOut(&out)
	cmd.SetErr(&errw)
	err := cmd.Execute()
	return out.String(), err
}

// sgldArgs is the reading's vector V1 (seed-001 §4.4): L = 1, λ = 0.01, n = 1000, σ = 0.1,
// η = 0.05, 1000 steps, batch 100, so z = σ·sqrt(2/η)·m/L = 63.2455532...
func sgldArgs() []string {
	z := 0.1 * math.Sqrt(2/0.05) * 100
	return []string{"--sampling", "without-replacement", "--neighbouring", "replace-one",
		"--dataset-size", "1000", "--batch-size", "100", "--steps", "1000", "--step-size", "0.05",
		"--noise-multiplier", formatFloat(z), "--clip-norm", "1", "--lipschitz", "1",
		"--smoothness", "10", "--strong-convexity", "0.01", "--diameter", "100",
		"--convexity", "strongly-convex", "--holder-exponent", "1", "--last-iterate-only"}
}

func formatFloat(x float64) string { b, _ := json.Marshal(x); return string(b) }

func TestCompareJSON(t *testing.T) {
	out, err := runCompareCmd(t, append(sgldArgs(), "--json", "--at", "100,500")...)
	if err != nil {
		t.Fatal(err)
	}
	var r struct {
		Modes []compare.Row `json:"modes"`
		Best  *compare.Row  `json:"best"`
	}
	if err := json.Unmarshal([]byte(out), &r); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	rows := map[string]compare.Row{}
	for _, m := range r.Modes {
		rows[m.Mode] = m
	}
	sg, ok := rows["sgld"]
	if !ok || !sg.Applicable || sg.Label != "paper" {
		t.Fatalf("sgld row %+v", sg)
	}
	// ρ = 0.008847968677 (reading V1); ε ≤ Mironov's 0.6471770496.
	if math.Abs(sg.Constants["rho"]-0.008847968677)/0.008847968677 > 1e-9 || sg.Epsilon > 0.6471770497 || sg.Epsilon < 0.4 {
		t.Errorf("sgld: ρ = %v, ε = %v", sg.Constants["rho"], sg.Epsilon)
	}
	if len(sg.At) != 3 || sg.At[0].Steps != 100 || sg.At[2].Steps != 1000 || !(sg.At[0].Epsilon < sg.At[1].Epsilon) {
		t.Errorf("sgld checkpoints %+v", sg.At)
	}
	cons := rows["sgld-conservative"]
	if !cons.Applicable || cons.Label != "certified" {
		t.Fatalf("sgld-conservative row %+v", cons)
	}
	// Conservative: its LSI bound is the paper's × (n/m)² = 100, and the smaller composition
	// bound is 1000·η·L²/(m²σ²) = 0.5, which DP-MBCD's composition for fresh subsets, α·ΣΔ with
	// Δ = 2/z², matches.
	if math.Abs(cons.Constants["rho_lsi"]/sg.Constants["rho"]-100) > 1e-9 || math.Abs(cons.Constants["rho"]-0.5) > 1e-12 {
		t.Errorf("conservative ρ %v (LSI %v) vs paper %v", cons.Constants["rho"], cons.Constants["rho_lsi"], sg.Constants["rho"])
	}
	if mb := rows["mbcd-certified"]; !mb.Applicable || math.Abs(mb.Constants["composition_sum"]-0.5) > 1e-12 {
		t.Errorf("mbcd-certified %+v", mb)
	}
	if r.Best == nil || r.Best.Source == "" || r.Best.Label != "certified" {
		t.Fatalf("best %+v", r.Best)
	}
	for _, m := range r.Modes {
		if m.Applicable && m.Label == "certified" && m.Epsilon < r.Best.Epsilon {
			t.Errorf("best %v (%s) is not the minimum: %s has %v", r.Best.Epsilon, r.Best.Source, m.Mode, m.Epsilon)
		}
		if !m.Applicable && m.Reason == "" {
			t.Errorf("%s not applicable without a reason", m.Mode)
		}
	}
}

func TestCompareTableAndReasons(t *testing.T) {
	args := sgldArgs()
	// Drop --last-iterate-only: every hidden-state mode must refuse, with the reason.
	args = args[:len(args)-1]
	out, err := runCompareCmd(t, args...)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out, "not applicable:") || !strings.Contains(out, "sgld: sgld: the bound covers releasing the last iterate only") {
		t.Errorf("table output lacks the reasons:\n%s", out)
	}
	// Composition accountants that cover fixed-size sampling still apply; hidden-state ones
	// must not be the best.
	if strings.Contains(out, "best (sgld") || strings.Contains(out, "best (mbcd") ||
		!(strings.Contains(out, "best: no applicable certified mode") || strings.Contains(out, "best (rdp)")) {
		t.Errorf("table output lacks the best line:\n%s", out)
	}
	out, err = runCompareCmd(t, append(sgldArgs(), "--at", "10")...)
	if err != nil || !strings.Contains(out, "ε@10") || !strings.Contains(out, "best (") {
		t.Errorf("table (err %v):\n%s", err, out)
	}
}

func TestComparePlot(t *testing.T) {
	file := filepath.Join(t.TempDir(), "eps.png")
	if _, err := runCompareCmd(t, append(sgldArgs(), "--plot", file, "--plot-points", "20")...); err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(file)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	st, _ := f.Stat()
	img, err := png.Decode(f)
	if err != nil || st.Size() == 0 {
		t.Fatalf("PNG: size %d, decode error %v", st.Size(), err)
	}
	if b := img.Bounds(); b.Dx() < 100 || b.Dy() < 100 {
		t.Errorf("PNG is %v", b)
	}
}

func TestCompareErrors(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--steps", "0"}, "--steps"},
		{[]string{"--steps", "10", "--delta", "2"}, "--delta"},
		{[]string{"--steps", "10"}, "--sample-rate"},
		{[]string{"--steps", "10", "--config", filepath.Join(t.TempDir(), "missing.yaml")}, "config"},
	} {
		if _, err := runCompareCmd(t, tc.args...); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%v: error %v, want one mentioning %q", tc.args, err, tc.want)
		}
	}
}

// TestCompareConfig reads a DP-SGLD training config: fashion-mnist (n = 60000, 10 classes),
// feature norm 1 with bias (R'² = 2), λ = 0.01, σ = 0.05, η = 0.1, b = 250, 200 steps. By hand:
// radius = min(sqrt(2 ln 10/0.01), sqrt(2)·sqrt(2)/0.01) = 21.4597, L = 2 + 0.01·radius,
// ρ = 4L²/(λn²σ²)·(1 − e^{−λ·200·0.1/2}).
func TestCompareConfig(t *testing.T) {
	cfg := `name: sgld
data:
  dataset: fashion-mnist
  feature_norm: 1
model:
  kind: logreg
optimizer:
  algorithm: dp-sgld
  update: sgd
  learning_rate: 0.1
  batch_size: 250
  sampling: without-replacement
  noise_multiplier: 0.05
  dp_sgld:
    regularization: 0.01
privacy:
  delta: 1.0e-6
training:
  steps: 200
`
	file := filepath.Join(t.TempDir(), "sgld.yaml")
	if err := os.WriteFile(file, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	out, err := runCompareCmd(t, "--config", file, "--json")
	if err != nil {
		t.Fatal(err)
	}
	var r struct {
		Delta float64       `json:"delta"`
		Steps int           `json:"steps"`
		Modes []compare.Row `json:"modes"`
	}
	if err := json.Unmarshal([]byte(out), &r); err != nil {
		t.Fatal(err)
	}
	radius := math.Sqrt(2 * math.Log(10) / 0.01)
	lip := 2 + 0.01*radius
	want := 4 * lip * lip / (0.01 * 6e4 * 6e4 * 0.05 * 0.05) * (1 - math.Exp(-0.01*200*0.1/2))
	if r.Delta != 1e-6 || r.Steps != 200 {
		t.Errorf("δ = %v, steps = %d", r.Delta, r.Steps)
	}
	for _, m := range r.Modes {
		if m.Mode != "sgld" {
			continue
		}
		if !m.Applicable || math.Abs(m.Constants["rho"]-want) > 1e-9*want || math.Abs(m.Constants["sigma"]-0.05) > 1e-12 {
			t.Errorf("sgld from config: %+v, want ρ = %v", m, want)
		}
		return
	}
	t.Error("no sgld row")
}

// TestCompareMBCDSchedule runs the DP-MBCD reading's TV2 setting (n = 2500, b = 100, η = 0.05,
// L_F = 0.98, o = 0.001: z = 40 at C = 0.5) on four blocks of 20 epochs each: after the first
// block the mbcd mode must equal TV2's ε = 0.20081, afterwards grow as blocks compose, and the
// single-block certified mode must refuse the second block.
func TestCompareMBCDSchedule(t *testing.T) {
	out, err := runCompareCmd(t, "--sampling", "shuffled-once", "--dataset-size", "2500", "--batch-size", "100",
		"--step-size", "0.05", "--noise-multiplier", "40", "--clip-norm", "0.5", "--lipschitz", "0.5", "--smoothness", "0.4",
		"--convexity", "convex", "--diameter", "10", "--last-iterate-only", "--neighbouring", "replace-one",
		"--blocks", "4", "--block-epochs", "20", "--steps", "2000", "--at", "500,1000", "--json")
	if err != nil {
		t.Fatal(err)
	}
	var r compare.Report
	if err := json.Unmarshal([]byte(out), &r); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	rows := map[string]compare.Row{}
	for _, m := range r.Modes {
		rows[m.Mode] = m
	}
	mb := rows["mbcd"]
	if !mb.Applicable || len(mb.At) != 3 {
		t.Fatalf("mbcd row %+v", mb)
	}
	if got := mb.At[0].Epsilon; math.Abs(got-0.20081) > 1e-5 {
		t.Errorf("mbcd after block 0 (500 steps): ε = %v, want TV2's 0.20081", got)
	}
	if !(mb.At[1].Epsilon > mb.At[0].Epsilon && mb.At[2].Epsilon > mb.At[1].Epsilon) {
		t.Errorf("mbcd ε does not grow as blocks compose: %+v", mb.At)
	}
	if c := rows["mbcd-certified"]; c.Applicable || !strings.Contains(c.Reason, "block 1 after block 0") {
		t.Errorf("mbcd-certified should refuse the second block: %+v", c)
	}
	if c := rows["chien-li"]; c.Applicable || !strings.Contains(c.Reason, "block") {
		t.Errorf("chien-li should refuse block-coordinate steps: %+v", c)
	}
}

// TestCompareMBCDRunConstants reaches DP-MBCD's constants from flags (accounting.Run): the
// paper's L_F given directly equals the one derived from β (|1 − ηβ| = 0.98 in TV2), and a
// contracting prox (L_T < 1) lowers ε.
func TestCompareMBCDRunConstants(t *testing.T) {
	mbcd := func(extra ...string) float64 {
		t.Helper()
		args := append([]string{"--sampling", "shuffled-once", "--dataset-size", "2500", "--batch-size", "100",
			"--step-size", "0.05", "--noise-multiplier", "40", "--clip-norm", "0.5", "--lipschitz", "0.5",
			"--convexity", "convex", "--last-iterate-only", "--neighbouring", "replace-one", "--steps", "500", "--json"}, extra...)
		out, err := runCompareCmd(t, args...)
		if err != nil {
			t.Fatal(err)
		}
		var r compare.Report
		if err := json.Unmarshal([]byte(out), &r); err != nil {
			t.Fatal(err)
		}
		for _, m := range r.Modes {
			if m.Mode == "mbcd" && m.Applicable {
				return m.Epsilon
			}
		}
		t.Fatalf("no applicable mbcd row for %v", extra)
		return 0
	}
	fromBeta := mbcd("--smoothness", "0.4")
	fromLF := mbcd("--gradient-lipschitz", "0.98")
	if math.Abs(fromBeta-0.20081) > 1e-5 || math.Abs(fromLF-fromBeta) > 1e-12 {
		t.Errorf("ε from β %v, from L_F %v; want both TV2's 0.20081", fromBeta, fromLF)
	}
	if prox := mbcd("--gradient-lipschitz", "0.98", "--prox-lipschitz", "0.9"); !(prox < fromLF) {
		t.Errorf("L_T = 0.9 gives ε = %v, not below %v", prox, fromLF)
	}
}
