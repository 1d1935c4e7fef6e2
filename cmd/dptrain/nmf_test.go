package main

import (
	"strings"
	"testing"
)

func TestNMFCommand(t *testing.T) {
	small := []string{"nmf", "--rows", "40", "--cols", "10", "--rank", "3", "--epochs", "3", "--seeds", "2", "--inner", "2"}
	out, _, err := runDptrain(t, append(small, "--batch", "10,20")...)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"seeded noise: reproducible, not private",
		"mbcd [paper] RDP(2) 0.42,",                                       // dp-mbcd calibrated under the paper's bound
		"mbcd-certified [certified] RDP(2) 0.42,",                         // dp-mbcd-certified under the certified one
		"mbcd-certified: not covered (hidden rows carried across visits)", // dp-mbcd, dp-sgd
		"composition [certified] RDP(2) 0.42,",                            // dp-sgd
		"none (σ = 0: not private)",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	if got := strings.Count(out, "\n"); got != 3+2*5 {
		t.Errorf("%d lines, want a header and 5 methods × 2 batch sizes:\n%s", got, out)
	}
	for _, bad := range [][]string{{"--batch", "7"}, {"--methods", "adam"}, {"--alpha", "1"}} {
		if _, _, err := runDptrain(t, append(small, bad...)...); err == nil {
			t.Errorf("%v accepted", bad)
		}
	}
}
