package dptrain

import (
	"strings"
	"testing"
)

// floors is the house, bottom up (docs/architecture.md): a package may import packages on its
// own floor or below, never above. A package takes the floor of the longest prefix listed
// (the module path left out; "." is the root package).
var floors = []struct {
	floor    int
	prefixes []string
}{
	{1, []string{"accounting", "data", "layer", "comm"}},
	{2, []string{"internal/kernels", "ledger", "optim"}},
	{3, []string{"models", "internal/mpi", "internal/dptest"}},
	{4, []string{"algorithm", "internal/planparts"}},
	{5, []string{"."}},
	{6, []string{"train/config", "train/rundir", "train/internal"}},
	{7, []string{"train"}},
	{8, []string{"cmd", "benchmarks", "internal/cmd"}},
}

const module = "github.com/dptrain/dptrain"

// floorOf returns the floor of an import path of this module, or 0 for none listed.
func floorOf(path string) int {
	rel := strings.TrimPrefix(strings.TrimPrefix(path, module), "/")
	if rel == "" {
		rel = "."
	}
	best, floor := -1, 0
	for _, f := range floors {
		for _, p := range f.prefixes {
			if (rel == p || strings.HasPrefix(rel, p+"/")) && len(p) > best {
				best, floor = len(p), f.floor
			}
		}
	}
	return floor
}

// TestFloors keeps dependencies pointing down: it lists every package of the module with its
// imports (the go command, with the build tags of every optional engine) and fails on a
// package that no floor names, or that imports a package on a higher floor.
func TestFloors(t *testing.T) {
	out := goList(t, "-tags", "openblas mpi dnnl integration", "-f",
		"{{.ImportPath}} {{join .Imports \" \"}} {{join .TestImports \" \"}}", module+"/...")
	for line := range strings.Lines(out) {
		fields := strings.Fields(line)
		if len(fields) == 0 {
			continue
		}
		p, from := fields[0], floorOf(fields[0])
		if from == 0 {
			t.Errorf("%s is on no floor: give it one in floors (floors_test.go) and docs/architecture.md", p)
			continue
		}
		for _, q := range fields[1:] {
			if !strings.HasPrefix(q, module) {
				continue
			}
			if to := floorOf(q); to > from {
				t.Errorf("%s (floor %d) imports %s (floor %d): dependencies point down; move the shared part below", p, from, q, to)
			}
		}
	}
}
