package train

import (
	"context"
	"strings"
	"testing"

	"github.com/dptrain/dptrain/train/config"
)

// A run whose σ was calibrated to a target ε can be resumed with --allow-changes and a longer
// training length: the checkpoint's σ is kept (recalibrating to the new length would change the
// mechanism mid-run), the stop rule still holds the target, and the summary says what changed.
func TestResumeLengthenedKeepsSigma(t *testing.T) {
	dir := t.TempDir()
	sets := []string{"output.dir=" + dir, "optimizer.noise_multiplier=auto", "privacy.target_epsilon=3", "training.steps=20"}
	cfg, err := config.ParseConfig([]byte(synthetic), sets)
	if err != nil {
		t.Fatal(err)
	}
	tr, err := New(context.Background(), cfg, Options{})
	if err != nil {
		t.Fatal(err)
	}
	first, err := tr.Run(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	sum, err := resume(t, dir, Options{AllowChanges: true}, "training.steps=40")
	if err != nil {
		t.Fatalf("resume lengthened with --allow-changes: %v", err)
	}
	if sum.NoiseMultiplier != first.NoiseMultiplier {
		t.Errorf("σ %v after the resume, %v before: a lengthened run keeps the checkpoint's σ", sum.NoiseMultiplier, first.NoiseMultiplier)
	}
	if sum.PlannedSteps != 40 || len(sum.ChangedOnResume) == 0 || !strings.Contains(strings.Join(sum.ChangedOnResume, " "), "training.steps") {
		t.Errorf("planned %d steps, changes %v: want 40 and the lengthening listed", sum.PlannedSteps, sum.ChangedOnResume)
	}
	for _, e := range sum.Epsilon {
		if e.Mode == "rdp" && e.Epsilon > 3 {
			t.Errorf("rdp ε = %v after the lengthened run: the stop rule must hold the target 3", e.Epsilon)
		}
	}
}
