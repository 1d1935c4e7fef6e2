package train

import (
	"context"
	"testing"

	"github.com/dptrain/dptrain/accounting"
)

// DP-ULR trains end to end from config through the registry in both modes: the ledger declares
// the mode's mechanism, ulr reports ε with the mode's label, and a run learns (test accuracy
// above chance on the 4-class synthetic mixture).
func TestDPULREndToEnd(t *testing.T) {
	for _, tc := range []struct {
		mode  string
		mech  accounting.Mechanism
		label accounting.Label
	}{
		{"paper", accounting.SampledWithRejectionGaussian, accounting.Paper},
		{"certified", accounting.Gaussian, accounting.Certified},
	} {
		cfg, err := ParseConfig([]byte(synthetic), []string{"output.dir=" + t.TempDir(), "optimizer.algorithm=dp-ulr",
			"optimizer.update=adam", "optimizer.learning_rate=0.01", "optimizer.sampling=poisson-with-rejection",
			"optimizer.min_batch_size=120", "optimizer.dp_ulr.mode=" + tc.mode, "optimizer.dp_ulr.copies=4",
			"privacy.accountants=[ulr]", "training.steps=60"})
		if err != nil {
			t.Fatal(err)
		}
		tr, err := New(context.Background(), cfg, Options{})
		if err != nil {
			t.Fatal(err)
		}
		sum, err := tr.Run(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		if l := tr.live.Ledger(); len(l) != 1 || l[0].Mechanism != tc.mech || l[0].MinBatchSize != 120 || l[0].Count != 60 {
			t.Errorf("%s: ledger %+v", tc.mode, l)
		}
		if e := sum.Epsilon[0]; e.Error != "" || !(e.Epsilon > 0) || e.Label != tc.label {
			t.Errorf("%s: ε %+v, want a positive ε labelled %s", tc.mode, e, tc.label)
		}
		if sum.TestAccuracy < 0.4 {
			t.Errorf("%s: test accuracy %v after 60 steps, want above 0.4 (chance 0.25)", tc.mode, sum.TestAccuracy)
		}
	}
}
