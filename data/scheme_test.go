package data_test

import (
	"testing"

	"github.com/dptrain/dptrain/accounting"
	"github.com/dptrain/dptrain/data"
)

// The schemes must spell the accounting.Sampling constants exactly: the trainer converts one
// into the other by a type conversion.
func TestSchemesMatchAccounting(t *testing.T) {
	for _, c := range []struct {
		s data.Scheme
		a accounting.Sampling
	}{
		{data.SchemeFull, accounting.FullBatch},
		{data.SchemePoisson, accounting.Poisson},
		{data.SchemeWithoutReplacement, accounting.WithoutReplacement},
		{data.SchemeShuffled, accounting.Shuffled},
		{data.SchemeShuffledOnce, accounting.ShuffledOnce},
		{data.SchemePoissonWithRejection, accounting.PoissonWithRejection},
	} {
		if string(c.s) != string(c.a) {
			t.Errorf("data scheme %q ≠ accounting sampling %q", c.s, c.a)
		}
	}
}
