package train

import (
	"bytes"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/dptrain/dptrain/accounting"
)

func TestProgressLineFitsTheTerminal(t *testing.T) {
	s := &StepInfo{Step: 1234, TotalSteps: 3516, Epoch: 10.53, Loss: 0.41237, Accuracy: 0.8712, Test: &Evaluation{Accuracy: 0.8431}}
	privacy := []ModeEpsilon{
		{Mode: "rdp", Label: accounting.Certified, Epsilon: 1.4321},
		{Mode: "pld", Label: accounting.Certified, Epsilon: 1.1093},
		{Mode: "gdp", Label: accounting.Approximate, Epsilon: 0.9876},
		{Mode: "chien-li", Error: "needs release: final"},
	}
	for _, tc := range []struct {
		width int
		want  []string // substrings that must be present
	}{
		{0, []string{"[=======", "1234/3516", "step/s", "ETA 1m54s", "loss 0.4124", "test 0.8431", "ε[rdp,certified]=1.432", "ε[gdp,approximate]=0.988", "ε[chien-li]=n/a"}},
		{160, []string{"1234/3516", "ETA 1m54s", "loss 0.4124", "ε[rdp,certified]=1.432", "ε[pld,certified]=1.109", "ε[gdp,approximate]=0.988"}},
		{100, []string{"1234/3516", "ETA 1m54s", "ε[rdp,c]=1.432", "ε[pld,c]=1.109", "ε[gdp,~]=0.988", "ε[chien-li]=n/a"}},
		{80, []string{"1234/3516", "ε[rdp,c]=1.432", "ε[pld,c]=1.109", "ε[gdp,~]=0.988", "ε[chien-li]=n/a"}},
		{60, []string{"1234/3516", "rdp=1.432c", "pld=1.109c", "gdp=0.988~", "chien-li=n/a"}},
	} {
		line := progressLine(s, privacy, 20, tc.width)
		if tc.width > 0 && utf8.RuneCountInString(line) > tc.width {
			t.Errorf("width %d: %d columns: %s", tc.width, utf8.RuneCountInString(line), line)
		}
		for _, w := range tc.want {
			if !strings.Contains(line, w) {
				t.Errorf("width %d: %q lacks %q", tc.width, line, w)
			}
		}
		t.Logf("%3d: %s", tc.width, line)
	}
}

// Each refresh shows the last ε of every mode, also at steps where ε was not recomputed.
func TestProgressKeepsLastEpsilon(t *testing.T) {
	var b bytes.Buffer
	p := NewProgress(&b, false, nil, 1)
	p.AfterStep(&StepInfo{Step: 1, TotalSteps: 3, Privacy: []ModeEpsilon{{Mode: "pld", Label: accounting.Certified, Epsilon: 0.5}}})
	p.AfterStep(&StepInfo{Step: 2, TotalSteps: 3})
	lines := strings.Split(strings.TrimSpace(b.String()), "\n")
	if len(lines) != 2 || !strings.Contains(lines[1], "ε[pld,certified]=0.500") {
		t.Errorf("lines %q: the second lacks the last ε", lines)
	}
}

// On a terminal the line is redrawn in place and follows a resize.
func TestProgressFollowsTerminalResize(t *testing.T) {
	var b bytes.Buffer
	width := 70
	p := NewProgress(&b, true, func() int { return width }, 1)
	privacy := []ModeEpsilon{{Mode: "rdp", Label: accounting.Certified, Epsilon: 1.25}, {Mode: "pld", Label: accounting.Certified, Epsilon: 0.75}}
	p.AfterStep(&StepInfo{Step: 1, TotalSteps: 2, Loss: 0.5, Accuracy: 0.5, Privacy: privacy})
	width = 200
	p.AfterStep(&StepInfo{Step: 2, TotalSteps: 2, Loss: 0.5, Accuracy: 0.5})
	draws := strings.Split(strings.TrimSuffix(b.String(), "\n"), "\r\033[K")
	if len(draws) != 3 || draws[0] != "" {
		t.Fatalf("draws %q", draws)
	}
	for i, w := range []int{70, 200} {
		if n := utf8.RuneCountInString(draws[i+1]); n > w || !strings.Contains(draws[i+1], "ε[pld,") {
			t.Errorf("draw %d (%d columns, terminal %d): %q", i+1, n, w, draws[i+1])
		}
	}
	if !strings.Contains(draws[2], "acc 0.500") || strings.Contains(draws[1], "acc 0.500") {
		t.Errorf("the wide redraw should show the accuracy the narrow one dropped: %q / %q", draws[1], draws[2])
	}
}
