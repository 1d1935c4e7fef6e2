package train

import (
	"context"
	"strings"
	"testing"
)

func TestInUserTerms(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"hidden-state bounds cover releasing the last iterate only: set last_iterate_only (Run.LastIterateOnly) or use a composition accountant",
			"hidden-state bounds cover releasing the last iterate only: set privacy.release: final or use a composition accountant"},
		{"no gradient bound: declare the Lipschitz constant (Run.Lipschitz) or clip per-example gradients (Step.Sensitivity)",
			"no gradient bound: declare the Lipschitz constant (the loss's Lipschitz constant) or clip per-example gradients (optimizer.clip_norm)"},
		{"plain text stays", "plain text stays"},
	} {
		if got := InUserTerms(tc.in, ConfigTerms); got != tc.want {
			t.Errorf("%q\n got %q\nwant %q", tc.in, got, tc.want)
		}
	}
}

// An accountant refusing a run speaks in config keys, not Go field names or paper sections.
func TestAccountantRefusalInConfigTerms(t *testing.T) {
	cfg, _ := ParseConfig([]byte(synthetic), []string{"output.dir=" + t.TempDir(), "privacy.accountants=[chien-li]", "privacy.release=all-iterates", "optimizer.update=sgd"})
	_, err := New(context.Background(), cfg, Options{})
	if err == nil || !strings.Contains(err.Error(), "privacy.release: final") || strings.Contains(err.Error(), "Run.") || strings.Contains(err.Error(), "seed-") {
		t.Errorf("refusal: %v", err)
	}
}
