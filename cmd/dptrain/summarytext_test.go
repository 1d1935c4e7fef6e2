package main

import (
	"strings"
	"testing"

	"github.com/dptrain/dptrain/accounting"
	"github.com/dptrain/dptrain/train"
	"github.com/dptrain/dptrain/train/rundir"
)

// The text summary names the bound a run clips to, says when no step was timed, and says
// whether the run may be published.
func TestSummaryWriteText(t *testing.T) {
	text := func(s train.Summary) string {
		t.Helper()
		var b strings.Builder
		if err := writeSummaryText(&b, &s); err != nil {
			t.Fatal(err)
		}
		return b.String()
	}
	s := train.Summary{Name: "run", Lipschitz: 2, OutputDir: "runs/x",
		Epsilon: []train.ModeEpsilon{{Mode: "rdp", Epsilon: 1.5, Delta: 1e-5, Label: accounting.Certified}, {Mode: "pld", Delta: 1e-5, Error: "no"}}}
	out := text(s)
	for _, want := range []string{", L = 2)", "no step ran in this session", "rdp", "1.5000", "pld", "n/a", "privacy ledger:", rundir.PublishLine("runs/x")} {
		if !strings.Contains(out, want) {
			t.Errorf("summary lacks %q:\n%s", want, out)
		}
	}
	s.ClipNorm, s.MsPerStep, s.Held = 1, 3, "interrupted"
	if out := text(s); !strings.Contains(out, "C = 1)") || !strings.Contains(out, "3.0 ms/step") || !strings.Contains(out, "NOT YET FOR RELEASE: interrupted") || strings.Contains(out, rundir.PublishLine("runs/x")) {
		t.Errorf("held run:\n%s", out)
	}
	s.Held, s.NotPrivate = "", "seeded"
	if out := text(s); !strings.Contains(out, "NOT PRIVATE: seeded") || !strings.Contains(out, "not for release") {
		t.Errorf("seeded run:\n%s", out)
	}
	// A run whose only ε is a paper bound (DP-MBCD's mbcd, say) is not called safe to publish.
	paper := train.Summary{Name: "mbcd", OutputDir: "runs/m", Epsilon: []train.ModeEpsilon{{Mode: "mbcd", Epsilon: 3, Delta: 1e-5, Label: accounting.Paper},
		{Mode: "mbcd-certified", Delta: 1e-5, Error: "covers one released block"}}}
	if out := text(paper); strings.Contains(out, "safe to publish:") || !strings.Contains(out, "not certified: no accountant certifies this run's ε") {
		t.Errorf("paper-only run:\n%s", out)
	}
	paper.CertifiedEpsilon = &train.ModeEpsilon{Mode: "rdp", Epsilon: 9, Delta: 1e-5, Label: accounting.Certified}
	if out := text(paper); !strings.Contains(out, rundir.PublishLine("runs/m")) {
		t.Errorf("paper ε with a certified one beside it:\n%s", out)
	}
	if out := text(train.Summary{}); !strings.Contains(out, "non-private run: no privacy guarantee") || strings.Contains(out, "release") {
		t.Errorf("non-private run:\n%s", out)
	}
}
