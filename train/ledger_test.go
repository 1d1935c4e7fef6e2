package train

import (
	"context"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/dptrain/dptrain/train/config"
	"github.com/dptrain/dptrain/train/rundir"
)

// A resume from an older checkpoint adds to the privacy ledger, never rewinds it: after 40
// steps, 20 more from the step-20 checkpoint report ε of 60 steps, and a second rewind that of
// 80 (20 + 20 + 20 + 20 steps executed on the data).
func TestResumeFromOlderCheckpointNeverRewindsLedger(t *testing.T) {
	dir := t.TempDir()
	cfg, err := config.ParseConfig([]byte(synthetic), []string{"output.dir=" + dir, "training.steps=40", "training.keep_checkpoints=5"})
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
	ck, err := rundir.LoadCheckpoint(rundir.PrivatePath(dir, "checkpoint-00000020.dpt"))
	if err != nil {
		t.Fatal(err)
	}
	epsOf := rdpOfSteps(t, tr, ck.Header.Ledger[0])
	if got, want := first.Epsilon[0].Epsilon, epsOf(40); math.Abs(got-want) > 1e-12*want {
		t.Fatalf("first run: ε = %v, want ε of 40 steps %v", got, want)
	}
	for _, want := range []int{60, 80} {
		sum, err := resume(t, dir, Options{ResumeFrom: rundir.PrivatePath(dir, "checkpoint-00000020.dpt")})
		if err != nil {
			t.Fatal(err)
		}
		if got, w := sum.Epsilon[0].Epsilon, epsOf(want); math.Abs(got-w) > 1e-12*w {
			t.Errorf("after a rewind to step 20: ε = %v (ε of 40 steps is %v), want ε of the %d steps executed, %v", got, epsOf(40), want, w)
		}
		if sum.Steps != 40 || sum.LedgerSteps != want || sum.AbandonedSteps != want-40 {
			t.Errorf("summary: %d steps, ledger %d, abandoned %d; want 40, %d, %d", sum.Steps, sum.LedgerSteps, sum.AbandonedSteps, want, want-40)
		}
	}
	if _, err := os.Stat(filepath.Join(rundir.PrivatePath(dir), rundir.LedgerFile)); err != nil {
		t.Errorf("no ledger file in private/: %v", err)
	}
}

// After a rewind the release is no longer the last iterate of one trajectory: the hidden-state
// accountants (mbcd here) stop applying and say why; a resume that abandoned nothing (an
// interrupt checkpoints at its step) keeps them.
func TestRewindVoidsHiddenStateAccountants(t *testing.T) {
	cfg, err := config.ParseConfig([]byte(synthetic), append(slices.Clone(mbcdOverrides), "output.dir="+t.TempDir()))
	if err != nil {
		t.Fatal(err)
	}
	_, sum := killAndResume(t, cfg, nil, 12) // checkpoint at 7: steps 8 to 12 abandoned
	if sum.AbandonedSteps != 5 || sum.Epsilon[0].Mode != "mbcd" || !strings.Contains(sum.Epsilon[0].Error, "abandoned") {
		t.Errorf("after a rewind of 5 steps: %d abandoned, ε[%s] = %v (%q); want mbcd to stop applying", sum.AbandonedSteps, sum.Epsilon[0].Mode, sum.Epsilon[0].Epsilon, sum.Epsilon[0].Error)
	}
	cfg2, _ := config.ParseConfig([]byte(synthetic), append(slices.Clone(mbcdOverrides), "output.dir="+t.TempDir()))
	_, sum2 := interruptAndResume(t, cfg2, nil, 12)
	if sum2.AbandonedSteps != 0 || sum2.Epsilon[0].Error != "" {
		t.Errorf("after an interrupt: %d abandoned, mbcd error %q; want mbcd to apply", sum2.AbandonedSteps, sum2.Epsilon[0].Error)
	}
}
