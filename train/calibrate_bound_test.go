package train

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/dptrain/dptrain"
	"github.com/dptrain/dptrain/train/config"
)

// A run planned for 10¹² steps with σ auto is refused before calibration replays its steps,
// with a message that names what to change; it does not sit in calibration for hours.
func TestAbsurdStepCountRefusedBeforeCalibrating(t *testing.T) {
	cfg, err := config.ParseConfig([]byte(synthetic), []string{"output.dir=" + t.TempDir(), "privacy.target_epsilon=2",
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

// Calibration honours its context: once it is done, building the plan stops with an error
// that wraps the context's (the trainer passes the context a signal cancels), whether it
// calibrates σ or only probes the accountants.
func TestCalibrationStopsWithContext(t *testing.T) {
	tr, _ := newTrainer(t, "privacy.target_epsilon=2", "training.steps=200")
	// The trainer's streams built its plan; every plan here has streams of its own.
	tr.streams, _ = dptrain.NewStreams(nil)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := tr.newPlan(ctx, 0, true); !errors.Is(err, context.Canceled) {
		t.Errorf("calibration under a cancelled context returned %v, want context.Canceled", err)
	}
	if _, err := tr.newPlan(ctx, 1, false); !errors.Is(err, context.Canceled) {
		t.Errorf("the accountant probe under a cancelled context returned %v, want context.Canceled", err)
	}
	tr.streams, _ = dptrain.NewStreams(nil)
	p, err := tr.newPlan(context.Background(), 0, true)
	if err != nil || !(p.NoiseMultiplier() > 0) {
		t.Errorf("calibration under a live context: %v", err)
	}
}
