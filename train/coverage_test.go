package train

import (
	"context"
	"strings"
	"testing"

	"github.com/dptrain/dptrain/train/config"
)

// TestCoverageCheckedInNew: a private run no configured accountant covers fails in New, before
// its first step, naming each accountant's reason; the stopping and calibration accountant is
// certified unless privacy.stop_on_uncertified_bound opts in, and then the summary says so.
func TestCoverageCheckedInNew(t *testing.T) {
	tests := []struct {
		name      string
		overrides []string
		wantErr   []string // substrings of New's error; nil: New succeeds
		wantStop  string
	}{
		{"shuffled batches, only rdp and pld", []string{"optimizer.sampling=shuffled", "privacy.accountants=[rdp,pld]"},
			[]string{"no configured accountant covers", "rdp:", "pld:"}, ""},
		{"default stop is certified", []string{"privacy.accountants=[gdp,rdp]", "privacy.target_epsilon=50"}, nil, "rdp"},
		{"approximate stop refused", []string{"privacy.accountants=[gdp,rdp]", "privacy.target_epsilon=50", "privacy.stop_accountant=gdp"},
			[]string{"approximate", "stop_on_uncertified_bound"}, ""},
		{"approximate stop opted in", []string{"privacy.accountants=[gdp,rdp]", "privacy.target_epsilon=50", "privacy.stop_accountant=gdp",
			"privacy.stop_on_uncertified_bound=true"}, nil, "gdp"},
		{"only approximate", []string{"privacy.accountants=[gdp]", "privacy.target_epsilon=50"}, []string{"certified"}, ""},
	}
	for _, tc := range tests {
		cfg, err := config.ParseConfig([]byte(synthetic), append(tc.overrides, "output.dir="+t.TempDir(), "training.steps=3"))
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		tr, err := New(context.Background(), cfg, Options{})
		if tc.wantErr != nil {
			for _, w := range tc.wantErr {
				if err == nil || !strings.Contains(err.Error(), w) {
					t.Errorf("%s: New error %v, want one containing %q", tc.name, err, w)
				}
			}
			continue
		}
		if err != nil {
			t.Fatalf("%s: New: %v", tc.name, err)
		}
		if cfg.Privacy.StopAccountant != tc.wantStop {
			t.Errorf("%s: stop accountant %q, want %q", tc.name, cfg.Privacy.StopAccountant, tc.wantStop)
		}
		sum, err := tr.Run(context.Background())
		if err != nil {
			t.Fatalf("%s: Run: %v", tc.name, err)
		}
		uncertified := tc.wantStop == "gdp"
		if got := sum.TargetBound; uncertified != (got != "") || uncertified && !strings.Contains(got, "approximate") ||
			uncertified && !strings.Contains(got, "certified ε[rdp]") {
			t.Errorf("%s: target_bound %q", tc.name, got)
		}
	}
}
