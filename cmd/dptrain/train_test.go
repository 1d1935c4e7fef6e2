package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/dptrain/dptrain/train/rundir"
)

const synthConfig = `
name: cli
seed: 1
data: {dataset: synthetic-mixture, normalize: none}
model: {kind: mlp, hidden: [8]}
optimizer: {algorithm: dp-sgd, learning_rate: 0.2, batch_size: 240, clip_norm: 1, noise_multiplier: 1}
privacy: {delta: 1.0e-5, accountants: [rdp, gdp]}
training: {steps: 20}
`

// train --json, then eval of the saved model, then the errors users meet most.
func TestTrainAndEvalCommands(t *testing.T) {
	dir := t.TempDir()
	cfg := filepath.Join(dir, "c.yaml")
	os.WriteFile(cfg, []byte(synthConfig), 0o644)
	out, _, err := runDptrain(t, "train", "--config", cfg, "--set", "output.dir="+filepath.Join(dir, "run"), "--json", "--no-progress")
	if err != nil {
		t.Fatal(err)
	}
	var sum struct {
		TestAccuracy    float64 `json:"test_accuracy"`
		Steps           int     `json:"steps"`
		Epochs          float64 `json:"epochs"`
		NoiseMultiplier float64 `json:"noise_multiplier"`
		ModelFile       string  `json:"model_file"`
		Epsilon         []struct {
			Mode, Label string
			Epsilon     float64
		} `json:"epsilon"`
	}
	if err := json.Unmarshal([]byte(out), &sum); err != nil {
		t.Fatalf("summary is not JSON: %v\n%s", err, out)
	}
	if sum.Steps != 20 || sum.NoiseMultiplier != 1 || len(sum.Epsilon) != 2 || sum.Epsilon[0].Label != "certified" || !(sum.Epsilon[0].Epsilon > 0) {
		t.Errorf("summary %+v", sum)
	}
	if acc := evalAccuracy(t, "--model", sum.ModelFile, "--dataset", "synthetic-mixture", "--normalize", "none"); acc != sum.TestAccuracy {
		t.Errorf("eval accuracy %v, training summary %v", acc, sum.TestAccuracy)
	}
	// The run's own config.yaml gives the same inputs, preprocessing included.
	if acc := evalAccuracy(t, "--model", sum.ModelFile, "--config", filepath.Join(dir, "run", "config.yaml")); acc != sum.TestAccuracy {
		t.Errorf("eval --config accuracy %v, training summary %v", acc, sum.TestAccuracy)
	}

	bad := filepath.Join(dir, "bad.yaml")
	os.WriteFile(bad, []byte(synthConfig+"trianing: {}\n"), 0o644)
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"train"}, "--config FILE is required"},
		{[]string{"train", "--config", bad}, "unknown key trianing: did you mean training?"},
		{[]string{"train", "--config", cfg, "--set", "privacy.delta=0"}, "privacy.delta"},
		{[]string{"eval", "--model", filepath.Join(dir, "nope.dpm"), "--dataset", "synthetic-mixture"}, "nope.dpm"},
		{[]string{"eval", "--model", sum.ModelFile, "--dataset", "synthetic-mixture", "--config", cfg}, "one of --dataset NAME or --config FILE"},
	} {
		if _, _, err := runDptrain(t, tc.args...); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%v: error %v, want %q", tc.args, err, tc.want)
		}
	}
}

func TestAccountCommands(t *testing.T) {
	out, _, err := runDptrain(t, "account", "--accountant", "rdp", "--sample-rate", "0.0042666666666666667", "--noise-multiplier", "1.1", "--epochs", "60", "--json")
	if err != nil {
		t.Fatal(err)
	}
	var g struct {
		Accountant string
		Epsilon    float64
		Order      float64
		Label      string
		Steps      int
	}
	if err := json.Unmarshal([]byte(out), &g); err != nil {
		t.Fatal(err)
	}
	if g.Accountant != "rdp" || g.Steps != 14063 || g.Epsilon < 2.57 || g.Epsilon > 2.6 || g.Order == 0 || g.Label != "certified" {
		t.Errorf("%+v", g)
	}
	out, _, err = runDptrain(t, "account", "calibrate", "--accountant", "rdp", "--target-epsilon", "3", "--sample-rate", "0.0341333", "--steps", "1172", "--json")
	if err != nil {
		t.Fatal(err)
	}
	var c struct {
		NoiseMultiplier float64 `json:"noise_multiplier"`
		Epsilon         float64
	}
	json.Unmarshal([]byte(out), &c)
	if c.Epsilon > 3 || c.Epsilon < 2.99 || c.NoiseMultiplier < 1.8 || c.NoiseMultiplier > 2.1 {
		t.Errorf("calibrate: %+v", c)
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"account", "--sample-rate", "1.5", "--noise-multiplier", "1", "--steps", "3"}, "--sample-rate"},
		{[]string{"account", "--sample-rate", "0.1", "--noise-multiplier", "0", "--steps", "3"}, "--noise-multiplier"},
		{[]string{"account", "--sample-rate", "0.1", "--noise-multiplier", "1", "--steps", "3", "--delta", "1"}, "--delta"},
		{[]string{"account", "--sample-rate", "0.1", "--noise-multiplier", "1", "--steps", "-2"}, "steps"},
		{[]string{"account", "calibrate", "--target-epsilon", "1e-6", "--sample-rate", "0.5", "--steps", "100000"}, "unreachable"},
		// An accountant's reason names the flags that change it, once prefixed by its name.
		{[]string{"account", "--accountant", "ulr", "--sample-rate", "0.01", "--noise-multiplier", "1", "--steps", "3"}, "set --sampling to poisson-with-rejection with --min-batch-size"},
		{[]string{"account", "--accountant", "ulr", "--sampling", "poisson-with-rejection", "--sample-rate", "0.01", "--dataset-size", "1000",
			"--min-batch-size", "50", "--noise-multiplier", "4", "--steps", "3"}, "lower --min-batch-size"},
	} {
		_, _, err := runDptrain(t, tc.args...)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%v: error %v, want %q", tc.args, err, tc.want)
		}
		if err != nil && (strings.Contains(err.Error(), "optimizer.") || strings.Contains(err.Error(), "ulr: ulr:")) {
			t.Errorf("%v: error %v names a config key or repeats the accountant", tc.args, err)
		}
	}
}

// A model records its preprocessing: eval --dataset uses it (here data.normalize unit, which
// the --normalize default would get wrong), and refuses a dataset or normalisation that
// contradicts it.
func TestEvalUsesRecordedPreprocessing(t *testing.T) {
	dir := t.TempDir()
	cfg := filepath.Join(dir, "c.yaml")
	os.WriteFile(cfg, []byte(synthConfig), 0o644)
	out, _, err := runDptrain(t, "train", "--config", cfg, "--set", "output.dir="+filepath.Join(dir, "run"), "--set", "data.normalize=unit", "--json", "--no-progress")
	if err != nil {
		t.Fatal(err)
	}
	var sum struct {
		TestAccuracy float64 `json:"test_accuracy"`
		ModelFile    string  `json:"model_file"`
	}
	json.Unmarshal([]byte(out), &sum)
	if acc := evalAccuracy(t, "--model", sum.ModelFile, "--dataset", "synthetic-mixture"); acc != sum.TestAccuracy {
		t.Errorf("eval --dataset: accuracy %v, training measured %v", acc, sum.TestAccuracy)
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--dataset", "synthetic-logistic"}, "was trained on synthetic-mixture"},
		{[]string{"--dataset", "synthetic-mixture", "--normalize", "standard"}, "was trained with data.normalize unit"},
		{[]string{"--config", cfg}, "data.normalize: unit → none"},
	} {
		if _, _, err := runDptrain(t, append([]string{"eval", "--model", sum.ModelFile}, tc.args...)...); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("eval %v: %v, want %q", tc.args, err, tc.want)
		}
	}
}

// evalAccuracy runs dptrain eval --json with args and returns the accuracy it prints.
func evalAccuracy(t *testing.T, args ...string) float64 {
	t.Helper()
	out, _, err := runDptrain(t, append(append([]string{"eval"}, args...), "--json")...)
	if err != nil {
		t.Fatal(err)
	}
	ev := struct{ Accuracy float64 }{-1}
	if err := json.Unmarshal([]byte(out), &ev); err != nil {
		t.Fatalf("eval --json printed %q: %v", out, err)
	}
	return ev.Accuracy
}

// A checkpoint that cannot be saved (here its file's name is taken by a directory; a full disk
// is tested in train) stops the run with the previous checkpoint named intact and the command
// that continues the run, the program as it was started.
func TestCheckpointFailurePrintsTheCommandToContinue(t *testing.T) {
	dir := t.TempDir()
	cfg := filepath.Join(dir, "c.yaml")
	if err := os.WriteFile(cfg, []byte(synthConfig), 0o644); err != nil {
		t.Fatal(err)
	}
	run := filepath.Join(dir, "run")
	if _, _, err := runDptrain(t, "train", "--config", cfg, "--no-progress", "--set", "output.dir="+run, "--set", "training.steps=10"); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(rundir.PrivatePath(run, "checkpoint-00000020.dpt"), 0o755); err != nil {
		t.Fatal(err)
	}
	_, _, err := runDptrainAs(t, "bin/dptrain", "train", "--config", filepath.Join(run, "config.yaml"), "--resume", "--allow-changes",
		"--no-progress", "--set", "training.steps=30", "--set", "training.checkpoint_every=10")
	want := "the previous checkpoint, at step 10 (" + rundir.PrivatePath(run, rundir.CheckpointFile) + "), is intact and the privacy ledger counts the steps run after it. Continue with:\n  bin/dptrain train --config " + filepath.Join(run, "config.yaml") + " --resume"
	if err == nil || !strings.Contains(err.Error(), "saving the checkpoint of step 20") || !strings.HasSuffix(err.Error(), want) {
		t.Errorf("a checkpoint that cannot be saved: %v\nwant it to end with %q", err, want)
	}
}
