package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A private run's report says which of its files may be published and which are the
// operator's only (issue 10, item 4).
func TestTrainSaysWhatIsPublishable(t *testing.T) {
	dir := t.TempDir()
	cfg := filepath.Join(dir, "c.yaml")
	os.WriteFile(cfg, []byte(synthConfig), 0o644)
	out, _, err := runDptrain(t, "train", "--config", cfg, "--no-progress", "--set", "output.dir="+filepath.Join(dir, "run"),
		"--set", "training.steps=3")
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"safe to publish: model.dpm and summary.json", "operator only", "metrics.jsonl", "checkpoint*.dpt"} {
		if !strings.Contains(out, want) {
			t.Errorf("train output does not say %q:\n%s", want, out)
		}
	}
}
