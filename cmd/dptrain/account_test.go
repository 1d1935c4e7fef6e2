package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"strings"
	"testing"

	"github.com/sirupsen/logrus"
)

func runAccountCmd(t *testing.T, args ...string) (string, error) {
	t.Helper()
	var out, errw bytes.Buffer
	a := &app{log: logrus.New(), out: &out, errw: &errw}
	a.log.SetOutput(&errw)
	cmd := newAccountCmd(a)
	cmd.SetArgs(args)
	cmd.SetOut(&out)
	cmd.SetErr(&errw)
	err := cmd.Execute()
	return out.String(), err
}

func decodeLines(t *testing.T, out string) []map[string]any {
	t.Helper()
	var rows []map[string]any
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		var m map[string]any
		if err := json.Unmarshal([]byte(line), &m); err != nil {
			t.Fatalf("line %q is not JSON: %v", line, err)
		}
		rows = append(rows, m)
	}
	return rows
}

// The TF Privacy tutorial case: RDP gives ε ≈ 2.597 with the improved conversion; PLD is
// tighter, GDP (CLT) lower still.
func TestAccountAllJSON(t *testing.T) {
	out, err := runAccountCmd(t, "--accountant", "all", "--sample-rate", formatFloat(256.0/60000),
		"--noise-multiplier", "1.1", "--epochs", "60", "--delta", "1e-5", "--json")
	if err != nil {
		t.Fatal(err)
	}
	rows := decodeLines(t, out)
	if len(rows) != 3 {
		t.Fatalf("want 3 lines, got %q", out)
	}
	eps := map[string]float64{}
	for _, r := range rows {
		eps[r["accountant"].(string)] = r["epsilon"].(float64)
		if r["steps"].(float64) != 14063 || r["delta"].(float64) != 1e-5 || r["label"] == "" {
			t.Errorf("row %v", r)
		}
	}
	if math.Abs(eps["rdp"]-2.597) > 1e-3 || rows[0]["order"].(float64) <= 1 {
		t.Errorf("rdp ε = %v (order %v), want 2.597", eps["rdp"], rows[0]["order"])
	}
	if !(eps["pld"] < eps["rdp"] && eps["pld"] > 2) || !(eps["gdp"] > 0) {
		t.Errorf("ε: %v", eps)
	}
}

func TestAccountBadInput(t *testing.T) {
	base := []string{"--accountant", "rdp", "--sample-rate", "0.01", "--noise-multiplier", "1", "--steps", "100", "--delta", "1e-5"}
	set := func(flag, v string) []string {
		args := append([]string(nil), base...)
		for i := range args {
			if args[i] == flag {
				args[i+1] = v
			}
		}
		return args
	}
	for name, args := range map[string][]string{
		"q zero":                set("--sample-rate", "0"),
		"q above 1":             set("--sample-rate", "1.5"),
		"sigma zero":            set("--noise-multiplier", "0"),
		"sigma NaN":             set("--noise-multiplier", "NaN"),
		"delta one":             set("--delta", "1"),
		"delta zero":            set("--delta", "0"),
		"steps":                 set("--steps", "-3"),
		"unknown":               set("--accountant", "nope"),
		"wor no n":              append(append([]string(nil), base...), "--sampling", "without-replacement"),
		"wor q≠b/n":             append(append([]string(nil), base...), "--sampling", "without-replacement", "--dataset-size", "1000", "--batch-size", "20"),
		"modelmix miss":         set("--accountant", "no-such-mode"),
		"rejection no N_B":      append(set("--accountant", "ulr"), "--sampling", "poisson-with-rejection", "--dataset-size", "10000"),
		"N_B without rejection": append(append([]string(nil), base...), "--min-batch-size", "5"),
		"bad mechanism":         append(append([]string(nil), base...), "--mechanism", "laplace"),
	} {
		if out, err := runAccountCmd(t, args...); err == nil {
			t.Errorf("%s: accepted, printed %q", name, out)
		} else if strings.Contains(out, "NaN") || strings.Contains(out, "Inf") {
			t.Errorf("%s: printed %q", name, out)
		}
	}
}

func TestAccountWithoutReplacementAndZeroSteps(t *testing.T) {
	out, err := runAccountCmd(t, "--accountant", "rdp", "--sample-rate", "0.01", "--noise-multiplier", "2",
		"--steps", "100", "--sampling", "without-replacement", "--dataset-size", "1000", "--json")
	if err != nil {
		t.Fatal(err)
	}
	if r := decodeLines(t, out)[0]; !(r["epsilon"].(float64) > 0) {
		t.Errorf("row %v", r)
	}
	out, err = runAccountCmd(t, "--accountant", "pld", "--sample-rate", "0.01", "--noise-multiplier", "2", "--steps", "0", "--json")
	if err != nil || decodeLines(t, out)[0]["epsilon"].(float64) != 0 {
		t.Errorf("zero steps: %q, %v", out, err)
	}
}

func TestAccountCalibrate(t *testing.T) {
	out, err := runAccountCmd(t, "calibrate", "--accountant", "rdp", "--target-epsilon", "2.5966",
		"--sample-rate", formatFloat(256.0/60000), "--steps", "14063", "--delta", "1e-5", "--json")
	if err != nil {
		t.Fatal(err)
	}
	r := decodeLines(t, out)[0]
	if s := r["noise_multiplier"].(float64); math.Abs(s-1.1) > 2e-3 || r["epsilon"].(float64) > 2.5966 {
		t.Errorf("calibrate: %v", r)
	}
	if _, err := runAccountCmd(t, "calibrate", "--accountant", "rdp", "--target-epsilon", "1e-6",
		"--sample-rate", "0.5", "--steps", "100000", "--delta", "1e-5"); err == nil || !strings.Contains(err.Error(), "unreachable") {
		t.Errorf("unreachable target: %v", err)
	}
}

func TestAccountRefusesDeltaOutOfRange(t *testing.T) {
	if _, _, err := runDptrain(t, "account", "--sample-rate", "0.01", "--noise-multiplier", "1", "--steps", "10", "--delta", "1"); err == nil || !strings.Contains(err.Error(), "--delta 1 must be in (0, 1)") {
		t.Errorf("δ = 1: %v", err)
	}
}

// DP-ULR's accountants from the command line: the reading's §3.7 case B = 200, σ0 = 4, 25
// epochs of MNIST, N_B = B/2 gives 0.27 (exact sampled Gaussian); DP-ULR's own noise is paper.
func TestAccountPoissonWithRejection(t *testing.T) {
	args := []string{"--sampling", "poisson-with-rejection", "--sample-rate", "0.0033333333333333335", "--dataset-size", "60000",
		"--min-batch-size", "100", "--noise-multiplier", "4", "--steps", "7500", "--json"}
	out, err := runAccountCmd(t, append([]string{"--accountant", "ulr"}, args...)...)
	if err != nil {
		t.Fatal(err)
	}
	if r := decodeLines(t, out)[0]; math.Abs(r["epsilon"].(float64)-0.27) > 0.005 || r["label"] != "certified" {
		t.Errorf("ulr row %v, want ε ≈ 0.27 certified", r)
	}
	out, err = runAccountCmd(t, append([]string{"--accountant", "ulr-simplified", "--mechanism", "sampled-with-rejection-gaussian"}, args...)...)
	if err != nil {
		t.Fatal(err)
	}
	if r := decodeLines(t, out)[0]; !(r["epsilon"].(float64) > 0.27) || r["label"] != "paper" {
		t.Errorf("ulr-simplified row %v, want ε above the exact 0.27, labelled paper", r)
	}
}

// A refusal names flags that exist: dptrain account has no --last-iterate-only, so a
// hidden-state accountant's refusal points to dptrain account compare's.
func TestAccountRefusalNamesExistingFlags(t *testing.T) {
	out, err := runAccountCmd(t, "--accountant", "sgld", "--sample-rate", "0.01", "--noise-multiplier", "1", "--steps", "100")
	if err == nil {
		t.Fatalf("sgld accepted: %s", out)
	}
	msg := out + err.Error()
	if !strings.Contains(msg, "--last-iterate-only (with dptrain account compare)") || strings.Contains(msg, "Run.") {
		t.Errorf("refusal %q: want it to name dptrain account compare's --last-iterate-only", msg)
	}
	out, err = runAccountCmd(t, "--accountant", "ulr", "--sample-rate", "0.01", "--noise-multiplier", "1", "--steps", "100", "--dataset-size", "1000")
	if msg := out + fmt.Sprint(err); !strings.Contains(msg, "set --sampling to poisson-with-rejection with --min-batch-size") {
		t.Errorf("ulr refusal %q: want the flags --sampling and --min-batch-size", msg)
	}
}
