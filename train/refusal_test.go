package train

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/dptrain/dptrain"
	"github.com/dptrain/dptrain/accounting"
	"github.com/dptrain/dptrain/train/config"
)

// An accountant refusing a run speaks in config keys, not Go field names or paper sections.
func TestAccountantRefusalInConfigTerms(t *testing.T) {
	cfg, _ := config.ParseConfig([]byte(synthetic), []string{"output.dir=" + t.TempDir(), "privacy.accountants=[chien-li]", "privacy.release=all-iterates", "optimizer.update=sgd"})
	_, err := New(context.Background(), cfg, Options{})
	if err == nil || !strings.Contains(err.Error(), "privacy.release: final") || strings.Contains(err.Error(), "Run.") || strings.Contains(err.Error(), "seed-") {
		t.Errorf("refusal: %v", err)
	}
	// The refusal is a value: the config key, the accountant and the field it is about.
	var ce *dptrain.ConfigError
	var re *accounting.RequirementError
	if !errors.As(err, &ce) || ce.Key != "privacy.accountants" || !errors.As(err, &re) || !slices.Contains(re.Fields, "Run.LastIterateOnly") {
		t.Errorf("refusal %v: want a *dptrain.ConfigError for privacy.accountants wrapping an *accounting.RequirementError about Run.LastIterateOnly", err)
	}
}
