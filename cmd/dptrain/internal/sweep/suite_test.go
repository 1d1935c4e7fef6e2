package sweep

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

func TestCellsAreTheGridProduct(t *testing.T) {
	s, err := LoadSuite("testdata/tiny.yaml")
	if err != nil {
		t.Fatal(err)
	}
	cells := s.Cells()
	want := []struct {
		id          string
		set         []string
		unavailable string
	}{
		{"dp-sgd_1", []string{"training.steps=20", "seed=1"}, ""},
		{"dp-sgd_2", []string{"training.steps=20", "seed=2"}, ""},
		{"dp-sgd-sgd_1", []string{"training.steps=20", "optimizer.update=sgd", "optimizer.learning_rate=1", "seed=1"}, ""},
		{"dp-sgd-sgd_2", []string{"training.steps=20", "optimizer.update=sgd", "optimizer.learning_rate=1", "seed=2"}, ""},
		{"future_1", []string{"training.steps=20", "seed=1"}, "not written yet"},
		{"future_2", []string{"training.steps=20", "seed=2"}, "not written yet"},
	}
	if len(cells) != len(want) {
		t.Fatalf("%d cells, want %d", len(cells), len(want))
	}
	for i, w := range want {
		c := cells[i]
		if c.Index != i || c.ID != w.id || !slices.Equal(c.Set, w.set) || c.Unavailable != w.unavailable {
			t.Errorf("cell %d = %+v, want %+v", i, c, w)
		}
		if ref := (c.Label("algorithm") == "dp-sgd-sgd"); ref != (c.Reference == "42% (a made-up paper)") {
			t.Errorf("cell %d reference %q: want it on dp-sgd-sgd cells only", i, c.Reference)
		}
		if c.Config != filepath.Join("testdata", "synthetic.yaml") {
			t.Errorf("cell %d config %q, want the suite's, relative to the suite file", i, c.Config)
		}
	}
}

func TestLoadSuiteRejects(t *testing.T) {
	cases := []struct{ name, text, want string }{
		{"no name", "axes: [{name: a, values: [{label: x}]}]", "name is empty"},
		{"no axes", "name: s", "no axes"},
		{"repeated axis", "name: s\naxes: [{name: a, values: [{label: x}]}, {name: a, values: [{label: y}]}]", "repeated"},
		{"empty axis", "name: s\naxes: [{name: a}]", "has no values"},
		{"repeated label", "name: s\naxes: [{name: a, values: [{label: x}, {label: x}]}]", "repeated"},
		{"slash in label", "name: s\naxes: [{name: a, values: [{label: x/y}]}]", "slash"},
		{"unknown key", "name: s\ngrid: []", "field grid not found"},
		{"reference to no axis", "name: s\naxes: [{name: a, values: [{label: x}]}]\nreferences: [{where: {b: x}, value: v}]", "does not have"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "s.yaml")
			if err := os.WriteFile(path, []byte(c.text), 0o644); err != nil {
				t.Fatal(err)
			}
			_, err := LoadSuite(path)
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("error %v, want one containing %q", err, c.want)
			}
		})
	}
}

func TestPlanRejectsABadOverride(t *testing.T) {
	s, err := LoadSuite("testdata/tiny.yaml")
	if err != nil {
		t.Fatal(err)
	}
	_, err = MakePlan(s, t.TempDir(), []string{"optimizer.learning_rat=1"})
	if err == nil || !strings.Contains(err.Error(), "cell dp-sgd_1") {
		t.Fatalf("error %v, want the first cell's config rejected, naming the cell", err)
	}
}

// Every shipped suite must plan: its configs parse and validate with every cell's overrides.
func TestShippedSuitesPlan(t *testing.T) {
	files, err := filepath.Glob("../../../../benchmarks/suites/*.yaml")
	if err != nil || len(files) == 0 {
		t.Fatalf("no suites found: %v", err)
	}
	for _, f := range files {
		s, err := LoadSuite(f)
		if err != nil {
			t.Errorf("%v", err)
			continue
		}
		if _, err := MakePlan(s, t.TempDir(), nil); err != nil {
			t.Errorf("%s: %v", f, err)
		}
	}
}

// A suite may name its configs by absolute path, on the suite and on an axis value; relative
// paths stay relative to the suite file.
func TestSuiteAbsoluteConfigPaths(t *testing.T) {
	base, err := filepath.Abs("testdata/synthetic.yaml")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	other := filepath.Join(dir, "other", "sgd.yaml")
	if err := os.MkdirAll(filepath.Dir(other), 0o755); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(base)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(other, b, 0o644); err != nil {
		t.Fatal(err)
	}
	suite := filepath.Join(dir, "suite.yaml")
	text := "name: abs\nconfig: " + base + "\nset: [training.steps=5]\naxes:\n  - name: v\n    values:\n      - label: a\n      - label: b\n        config: " + other + "\n      - label: c\n        config: other/sgd.yaml\n"
	if err := os.WriteFile(suite, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	s, err := LoadSuite(suite)
	if err != nil {
		t.Fatal(err)
	}
	cells := s.Cells()
	for i, want := range []string{base, other, other} {
		if cells[i].Config != want {
			t.Errorf("cell %s: config %s, want %s", cells[i].ID, cells[i].Config, want)
		}
	}
	if _, err := MakePlan(s, filepath.Join(dir, "plan"), nil); err != nil {
		t.Errorf("planning a suite with absolute config paths: %v", err)
	}
}
