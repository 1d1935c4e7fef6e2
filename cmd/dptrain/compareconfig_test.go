package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/dptrain/dptrain/accounting/compare"
)

// describeFromConfig takes the mechanism and the algorithm's constants from the config, keeps
// what the caller set, and refuses an auto noise multiplier the caller did not give.
func TestDescribeFromConfig(t *testing.T) {
	const file = "../../configs/fmnist-logreg-dpsgld.yaml"
	d := compare.Described{Delta: 1e-3}
	if err := describeFromConfig(file, &d, func(flag string) bool { return flag == "delta" }); err != nil {
		t.Fatal(err)
	}
	if d.DatasetSize != 60000 || d.BatchSize != 256 || d.Steps != 1172 || !(d.NoiseMultiplier > 0) || d.Delta != 1e-3 ||
		d.Sampling != "without-replacement" || !d.LastIterateOnly || !(d.Lipschitz > 0) || d.StrongConvexity != 0.001 {
		t.Errorf("described %+v", d)
	}
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	auto := filepath.Join(t.TempDir(), "auto.yaml")
	edit := strings.NewReplacer("noise_multiplier: 0.02", "noise_multiplier: auto", "delta: 1.0e-5", "delta: 1.0e-5\n  target_epsilon: 1")
	if err := os.WriteFile(auto, []byte(edit.Replace(string(b))), 0o600); err != nil {
		t.Fatal(err)
	}
	err = describeFromConfig(auto, &compare.Described{}, func(string) bool { return false })
	if err == nil || !strings.Contains(err.Error(), "give --noise-multiplier") {
		t.Errorf("auto σ: %v", err)
	}
}
