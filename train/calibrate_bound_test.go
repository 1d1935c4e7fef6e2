package train

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"
)

// A run planned for 10¹² steps with σ auto is refused before calibration replays its steps,
// with a message that names what to change; it does not sit in calibration for hours.
func TestAbsurdStepCountRefusedBeforeCalibrating(t *testing.T) {
	cfg, err := ParseConfig([]byte(synthetic), []string{"output.dir=" + t.TempDir(), "privacy.target_epsilon=2",
		"optimizer.noise_multiplier=auto", "training.steps=1000000000000"})
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() {
		_, err := New(context.Background(), cfg, Options{})
		done <- err
	}()
	select {
	case err = <-done:
	case <-time.After(60 * time.Second):
		t.Fatal("preparing a run of 10¹² steps did not finish within 60 s")
	}
	if err == nil {
		t.Fatal("a run of 10¹² steps with σ auto was accepted")
	}
	for _, want := range []string{"1000000000000", "training.steps", "optimizer.noise_multiplier"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not mention %q", err, want)
		}
	}
}

// Calibration honours its context: once it is done, calibrating stops with an error that
// wraps the context's (the trainer passes the context a signal cancels).
func TestCalibrationStopsWithContext(t *testing.T) {
	tr, _ := newTrainer(t, "privacy.target_epsilon=2", "training.steps=200")
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := tr.calibrateContext(ctx); !errors.Is(err, context.Canceled) {
		t.Errorf("calibration under a cancelled context returned %v, want context.Canceled", err)
	}
	if err := tr.checkCoverageContext(ctx, tr.declaredRun(tr.opt)); !errors.Is(err, context.Canceled) {
		t.Errorf("the accountant probe under a cancelled context returned %v, want context.Canceled", err)
	}
	sigma, err := tr.calibrateContext(context.Background())
	if err != nil || !(sigma > 0) {
		t.Errorf("calibration under a live context: σ = %v, %v", sigma, err)
	}
}
