package main

import (
	"strings"
	"testing"
)

// dptrain account tune prints a search's ε above one candidate's, calibrates σ so that the
// whole search meets a target, and refuses what its theorems do not cover.
func TestAccountTune(t *testing.T) {
	base := []string{"tune", "--sample-rate", "0.004", "--steps", "1000", "--json"}
	for _, law := range []string{"poisson", "logarithmic", "geometric", "negative-binomial"} {
		out, err := runAccountCmd(t, append(base, "--candidates", law, "--mean-candidates", "10", "--noise-multiplier", "1.1")...)
		if err != nil {
			t.Fatalf("%s: %v", law, err)
		}
		r := decodeLines(t, out)[0]
		single, search := r["single_epsilon"].(float64), r["search_epsilon"].(float64)
		if !(search > single && single > 0) || r["label"] != "certified" {
			t.Errorf("%s: search ε %v, single ε %v, label %v", law, search, single, r["label"])
		}
	}
	out, err := runAccountCmd(t, append(base, "--candidates", "geometric", "--target-epsilon", "3")...)
	if err != nil {
		t.Fatal(err)
	}
	if r := decodeLines(t, out)[0]; !(r["search_epsilon"].(float64) <= 3 && r["search_epsilon"].(float64) > 2.99) {
		t.Errorf("calibrated search: %v", r)
	}
	for name, args := range map[string][]string{
		"mean 1":         {"tune", "--candidates", "geometric", "--mean-candidates", "1", "--sample-rate", "0.01", "--steps", "10", "--noise-multiplier", "1"},
		"unknown law":    {"tune", "--candidates", "uniform", "--sample-rate", "0.01", "--steps", "10", "--noise-multiplier", "1"},
		"not poisson":    {"tune", "--sampling", "full", "--sample-rate", "1", "--steps", "10", "--noise-multiplier", "1"},
		"both σ, target": {"tune", "--sample-rate", "0.01", "--steps", "10", "--noise-multiplier", "1", "--target-epsilon", "3"},
		"no steps":       {"tune", "--sample-rate", "0.01", "--steps", "0", "--noise-multiplier", "1"},
		"bad eta":        {"tune", "--candidates", "negative-binomial", "--eta", "-2", "--sample-rate", "0.01", "--steps", "10", "--noise-multiplier", "1"},
	} {
		if out, err := runAccountCmd(t, args...); err == nil || strings.Contains(out, "NaN") {
			t.Errorf("%s: accepted (%q)", name, out)
		}
	}
}
