package auditreport

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	bound "github.com/dptrain/dptrain/accounting/audit"
	"github.com/dptrain/dptrain/train"
	"github.com/dptrain/dptrain/train/audit"
	"github.com/dptrain/dptrain/train/config"
)

func TestIsolate(t *testing.T) {
	cfg := &config.Config{}
	cfg.Output.Dir = "runs/x"
	Isolate(cfg, []string{"training.epochs=1"})
	if cfg.Output.Dir != "runs/x-audit" {
		t.Errorf("output dir %q, want runs/x-audit", cfg.Output.Dir)
	}
	Isolate(cfg, []string{"output.dir=runs/y"})
	if cfg.Output.Dir != "runs/x-audit" {
		t.Errorf("an explicit output.dir was changed: %q", cfg.Output.Dir)
	}
}

func TestSaveAndWriteText(t *testing.T) {
	r := &audit.Report{Threat: audit.Threat("all-iterates"), Canaries: 100, Included: 48, Support: 1,
		Bound:   bound.Result{Epsilon: 0.5, Confidence: 0.95, Delta: 1e-5, Best: bound.Guesses{Plus: 5, Minus: 5, Correct: 9}, Bonferroni: 6},
		Modes:   []audit.Verdict{{Mode: "rdp", Label: "certified", Epsilon: 2, Verdict: "consistent"}, {Mode: "sgld", Error: "n/a here", Verdict: "no ε"}},
		Summary: &train.Summary{Name: "run", OutputDir: "runs/x-audit", Reproducible: true}}
	dir := t.TempDir()
	if err := Save(dir, r); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(filepath.Join(dir, File))
	if err != nil || !json.Valid(b) {
		t.Fatalf("report file: %v\n%s", err, b)
	}
	var out strings.Builder
	if err := WriteText(&out, r); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"ε_lower = 0.5000 at 95% confidence", "9 of 10 guesses correct", "rdp", "consistent", "sgld", "(n/a here)",
		"never certify", "WARNING: a seed was set", filepath.Join("runs/x-audit", File)} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("text lacks %q:\n%s", want, out.String())
		}
	}
}

// The header names the gradient bound the run used: C for a clipping algorithm, and for one
// that clips nothing (DP-SGLD) its Lipschitz constant L, rounded, never "C = 0".
func TestWriteTextNamesTheBound(t *testing.T) {
	for _, tc := range []struct {
		sum          train.Summary
		want, absent string
	}{
		{train.Summary{Name: "a", Algorithm: "dp-sgd", ClipNorm: 1.5}, "C = 1.5,", "L ="},
		{train.Summary{Name: "b", Algorithm: "dp-sgld", Lipschitz: 2.0000000000000004}, "L = 2,", "C = 0"},
	} {
		var out strings.Builder
		if err := WriteText(&out, &audit.Report{Summary: &tc.sum}); err != nil {
			t.Fatal(err)
		}
		head := strings.SplitN(out.String(), "\n", 2)[0]
		if !strings.Contains(head, tc.want) || strings.Contains(head, tc.absent) {
			t.Errorf("%s: header %q, want %q and no %q", tc.sum.Algorithm, head, tc.want, tc.absent)
		}
	}
}
