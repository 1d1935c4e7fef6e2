package train

import (
	"context"
	"testing"

	"github.com/dptrain/dptrain/train/config"
)

// The gdp accountant's label is the one of the run, also when no step ran: a run stopped
// before its first step reports approximate, as after one subsampled step.
func TestGDPLabelDoesNotFlipAtStepZero(t *testing.T) {
	for _, steps := range []int{0, 1} {
		cfg, err := config.ParseConfig([]byte(synthetic), []string{"output.dir=" + t.TempDir(), "privacy.accountants=[rdp, gdp]"})
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithCancel(context.Background())
		stop := HookFunc(func(*StepInfo) error { cancel(); return nil })
		tr, err := New(context.Background(), cfg, Options{Hooks: []Hook{stop}})
		if err != nil {
			t.Fatal(err)
		}
		if steps == 0 {
			cancel()
		}
		sum, err := tr.Run(ctx)
		cancel()
		if err != nil {
			t.Fatal(err)
		}
		if sum.Steps != steps {
			t.Fatalf("%d steps, want %d", sum.Steps, steps)
		}
		for _, e := range sum.Epsilon {
			if e.Mode == "gdp" && e.Label != "approximate" {
				t.Errorf("after %d steps: gdp label %q, want approximate", steps, e.Label)
			}
		}
	}
}
