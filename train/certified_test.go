package train

import (
	"context"
	"math"
	"strings"
	"testing"

	"github.com/dptrain/dptrain/accounting"
)

// With only gdp (an approximate bound) configured, the summary gives the certified ε of the
// same run from rdp beside it, and the target note names it instead of saying that no
// certified bound covers the run.
func TestCertifiedEpsilonBesideApproximateOnly(t *testing.T) {
	tr, _ := newTrainer(t, "privacy.accountants=[gdp]", "privacy.target_epsilon=50",
		"privacy.stop_accountant=gdp", "privacy.stop_on_uncertified_bound=true")
	sum, err := tr.Run(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	ref, _ := newTrainer(t, "privacy.accountants=[rdp]")
	want, err := ref.Run(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	c := sum.CertifiedEpsilon
	if c == nil || c.Mode != "rdp" || c.Label != accounting.Certified || math.Abs(c.Epsilon-want.Epsilon[0].Epsilon) > 1e-12 {
		t.Fatalf("certified ε beside gdp: %+v, want rdp's certified ε of the same run %v", c, want.Epsilon[0].Epsilon)
	}
	if strings.Contains(sum.TargetBound, "no certified bound") || !strings.Contains(sum.TargetBound, "ε[rdp") {
		t.Errorf("target note %q: want it to give rdp's certified ε", sum.TargetBound)
	}
	if want.CertifiedEpsilon != nil {
		t.Errorf("a run with rdp configured gets a second certified ε: %+v", want.CertifiedEpsilon)
	}
	if !strings.Contains(sum.PublicQuantities, "n = 4800") {
		t.Errorf("public quantities %q do not declare n", sum.PublicQuantities)
	}
}
