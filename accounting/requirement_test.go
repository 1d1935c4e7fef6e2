package accounting_test

import (
	"errors"
	"fmt"
	"testing"

	"github.com/dptrain/dptrain/accounting"
	"github.com/dptrain/dptrain/accounting/sgld"
)

// A refusal names its fields so that a front-end can say them in its own terms, however the
// error was wrapped; errors.As finds it with its accountant and theorem.
func TestRequirementErrorNamesFields(t *testing.T) {
	flags := map[string]string{"Step.Sampling": "--sampling", "Step.MinBatchSize": "--min-batch-size"}
	e := &accounting.RequirementError{Accountant: "ulr", Theorem: "Theorem 3.6", Reason: "poisson sampling is not Poisson sampling with rejection",
		Fix: "set %s to poisson-with-rejection with %s", Fields: []string{"Step.Sampling", "Step.MinBatchSize"}}
	for _, c := range []struct {
		err  error
		name func(string) string
		want string
	}{
		{e, nil, "ulr: poisson sampling is not Poisson sampling with rejection: set Step.Sampling to poisson-with-rejection with Step.MinBatchSize"},
		{e, func(f string) string { return flags[f] }, "ulr: poisson sampling is not Poisson sampling with rejection: set --sampling to poisson-with-rejection with --min-batch-size"},
		{fmt.Errorf("refused the record after step 3: %w", e), func(f string) string { return flags[f] },
			"refused the record after step 3: ulr: poisson sampling is not Poisson sampling with rejection: set --sampling to poisson-with-rejection with --min-batch-size"},
		{e, func(string) string { return "" }, e.Error()},
		{errors.New("plain"), func(f string) string { return flags[f] }, "plain"},
		{nil, nil, ""},
	} {
		if got := accounting.Describe(c.err, c.name); got != c.want {
			t.Errorf("Describe(%v) =\n%q, want\n%q", c.err, got, c.want)
		}
	}
	// A real accountant's refusal.
	_, err := sgld.New(accounting.Run{UpdateRule: "sgd", DatasetSize: 10})
	var re *accounting.RequirementError
	if !errors.As(err, &re) || re.Accountant != "sgld" || re.Theorem == "" || len(re.Fields) != 1 || re.Fields[0] != "Run.LastIterateOnly" {
		t.Errorf("sgld without the last iterate: %v (%+v)", err, re)
	}
}
