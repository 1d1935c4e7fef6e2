package main

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/dptrain/dptrain/cmd/dptrain/internal/sweep"
	"github.com/dptrain/dptrain/data"
)

// requireFashionMNIST skips what needs the real Fashion-MNIST under -short or where Debian's
// dataset-fashion-mnist is not installed.
func requireFashionMNIST(t *testing.T, what string) {
	t.Helper()
	if testing.Short() {
		t.Skip("-short: skipping " + what)
	}
	const fmnist = "/usr/share/datasets/fashion-mnist"
	if _, err := os.Stat(fmnist); err != nil {
		t.Skip("Fashion-MNIST not found at " + fmnist + " (install Debian's dataset-fashion-mnist)")
	}
}

// planCISuite plans benchmarks/suites/NAME.yaml with the CI-sized overrides sets in a
// temporary directory (skipping as requireFashionMNIST does).
func planCISuite(t *testing.T, name string, sets []string) *sweep.Plan {
	t.Helper()
	requireFashionMNIST(t, "the CI-sized "+name+" suite")
	return planSuiteOn(t, name, sets)
}

// requireDataset skips what needs the dataset called name under -short or where the data
// package does not find it ($DPTRAIN_DATA, the user cache, the system roots), naming get, the
// command that installs it.
func requireDataset(t *testing.T, name, get string) {
	t.Helper()
	if testing.Short() {
		t.Skip("-short: skipping what needs " + name)
	}
	if _, err := (&data.Locator{}).Find(name); err != nil {
		t.Skipf("%s is not installed (%s): %v", name, get, err)
	}
}

// planSuiteOn plans benchmarks/suites/NAME.yaml with the overrides sets in a temporary
// directory; the caller checks that the suite's data is there.
func planSuiteOn(t *testing.T, name string, sets []string) *sweep.Plan {
	t.Helper()
	s, err := sweep.LoadSuite("../../benchmarks/suites/" + name + ".yaml")
	if err != nil {
		t.Fatal(err)
	}
	p, err := sweep.MakePlan(s, filepath.Join(t.TempDir(), "plan"), sets)
	if err != nil {
		t.Fatal(err)
	}
	return p
}
