package dptrain

import (
	"bytes"
	"fmt"
	"os/exec"
	"slices"
	"strings"
	"testing"
)

// lightPrefixes are the only import paths outside the standard library that importing package
// dptrain may pull in: our own packages (themselves held to the same rule, transitively),
// gonum, and golang.org/x/sys (internal/kernels reads CPU features through
// golang.org/x/sys/cpu to pick its AVX2/FMA kernels).
var lightPrefixes = []string{"github.com/dptrain/dptrain", "gonum.org/v1/gonum/", "golang.org/x/sys/"}

func light(path string) bool {
	for _, p := range lightPrefixes {
		if path == strings.TrimSuffix(p, "/") || strings.HasPrefix(path, strings.TrimSuffix(p, "/")+"/") {
			return true
		}
	}
	return false
}

// TestLightDependencies keeps the library light: importing package dptrain must not pull in
// gorgonia, yaml, protobuf, arrow or any other third-party module beyond gonum (the
// trainer's YAML configs and the graph engine of package models stay behind package train
// and package models). It lists the root package's dependencies with the go command and names,
// for each of our packages (or allowed ones) that imports something else, the import chain
// from the root that brings it in.
func TestLightDependencies(t *testing.T) {
	out := goList(t, "-deps", "-f", "{{if not .Standard}}{{.ImportPath}} {{join .Imports \" \"}}{{end}}", ".")
	imports := map[string][]string{} // every non-standard dependency and what it imports
	var root string
	for line := range strings.Lines(out) {
		fields := strings.Fields(line)
		if len(fields) == 0 {
			continue
		}
		imports[fields[0]] = fields[1:]
		root = fields[0] // go list -deps prints the package itself last
	}
	if root != "github.com/dptrain/dptrain" {
		t.Fatalf("go list -deps . printed %q last, want the root package github.com/dptrain/dptrain", root)
	}

	// Shortest import chains from the root, over non-standard packages.
	via := map[string]string{root: ""}
	queue := []string{root}
	for len(queue) > 0 {
		p := queue[0]
		queue = queue[1:]
		for _, q := range imports[p] {
			if _, seen := via[q]; !seen {
				if _, nonStd := imports[q]; nonStd {
					via[q] = p
					queue = append(queue, q)
				}
			}
		}
	}
	chain := func(p string) string {
		var c []string
		for ; p != ""; p = via[p] {
			c = append(c, p)
		}
		slices.Reverse(c)
		return strings.Join(c, " → ")
	}

	var heavy []string
	var report []string
	for p, deps := range imports {
		if !light(p) {
			heavy = append(heavy, p)
			continue
		}
		var bad []string
		for _, q := range deps {
			if _, nonStd := imports[q]; nonStd && !light(q) {
				bad = append(bad, q)
			}
		}
		if len(bad) > 0 {
			slices.Sort(bad)
			report = append(report, fmt.Sprintf("%s imports %s\n\t(chain: %s)", p, strings.Join(bad, ", "), chain(p)))
		}
	}
	if len(heavy) > 0 {
		slices.Sort(heavy)
		slices.Sort(report)
		t.Errorf("importing %s pulls in %d packages outside the standard library, gonum and golang.org/x/sys:\n  %s\n\nwhere they come in:\n  %s\n\n"+
			"keep gorgonia (package models), yaml (package train) and the like out of the root package's dependencies",
			root, len(heavy), strings.Join(heavy, "\n  "), strings.Join(report, "\n  "))
	}
}

// goList runs the go command's list with args and returns its output; it skips the test where
// the go command is not on PATH.
func goList(t *testing.T, args ...string) string {
	t.Helper()
	goCmd, err := exec.LookPath("go")
	if err != nil {
		t.Skip("the go command is not on PATH: cannot list the module's packages")
	}
	cmd := exec.Command(goCmd, append([]string{"list"}, args...)...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list %s: %v\n%s", strings.Join(args, " "), err, stderr.String())
	}
	return string(out)
}
