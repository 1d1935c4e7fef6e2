package config

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// minimal and synthetic are the configs of train's tests (../testdata): the smallest valid
// one, and a short run on the synthetic mixture.
var (
	minimal   = readTestdata("minimal.yaml")
	synthetic = readTestdata("synthetic.yaml")
)

// readTestdata returns the text of ../testdata/name.
func readTestdata(name string) string {
	b, err := os.ReadFile(filepath.Join("..", "testdata", name))
	if err != nil {
		panic(err)
	}
	return string(b)
}

func TestParseConfigDefaults(t *testing.T) {
	cfg, err := ParseConfig([]byte(minimal), nil)
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Optimizer.Sampling != "poisson" || cfg.Optimizer.Update != "sgd" {
		t.Errorf("defaults: sampling %q update %q", cfg.Optimizer.Sampling, cfg.Optimizer.Update)
	}
	// The stopping accountant is chosen in New, once the run's coverage is known.
	if got := cfg.Privacy.Accountants; len(got) != 2 || got[0] != "rdp" || cfg.Privacy.StopAccountant != "" {
		t.Errorf("accountants %v stop %q", got, cfg.Privacy.StopAccountant)
	}
	if cfg.Optimizer.NoiseMultiplier.Value != 1.1 || cfg.Optimizer.NoiseMultiplier.Auto {
		t.Errorf("noise multiplier %+v", cfg.Optimizer.NoiseMultiplier)
	}
}

func TestParseConfigErrors(t *testing.T) {
	tests := []struct {
		name      string
		yaml      string
		overrides []string
		want      string // substring of the error
	}{
		{"key in the wrong section", minimal + "  modelmix:\n    gap: 1\n", nil, "line 17: unknown key training.modelmix: did you mean optimizer.modelmix?"},
		{"unknown key with line", minimal + "  epoch: 3\n", nil, "line 17: unknown key training.epoch: did you mean training.epochs?"},
		{"typo nested", strings.Replace(minimal, "clip_norm", "clipnorm", 1), nil, "line 11: unknown key optimizer.clipnorm: did you mean optimizer.clip_norm?"},
		{"fractional integer in the file", strings.Replace(minimal, "batch_size: 256", "batch_size: 1.5", 1), nil, "line 10: optimizer.batch_size = 1.5: must be a whole number"},
		{"fractional integer in --set", minimal, []string{"optimizer.batch_size=1.5"}, "--set optimizer.batch_size=1.5: optimizer.batch_size = 1.5: must be a whole number"},
		{"word for an integer in --set", minimal, []string{"training.steps=many"}, "--set training.steps=many: training.steps = \"many\": must be a whole number"},
		{"word for a number in the file", strings.Replace(minimal, "clip_norm: 1", "clip_norm: one", 1), nil, "line 11: optimizer.clip_norm = \"one\": must be a number"},
		{"list for a name", minimal, []string{"name=[a, b]"}, "--set name=[a, b]: name = a list: must be a single value"},
		{"negative seed", minimal, []string{"seed=-1"}, "--set seed=-1: seed = -1: must not be negative"},
		{"typo in --set", minimal, []string{"optimizer.lerning_rate=1"}, "--set optimizer.lerning_rate=1: unknown key optimizer.lerning_rate: did you mean optimizer.learning_rate?"},
		{"--set key in another section", minimal, []string{"optimizer.epochs=3"}, "did you mean training.epochs?"},
		{"epochs and steps both set", minimal, []string{"training.epochs=2", "training.steps=9"}, "give the run's length once"},
		{"unknown accountant", minimal, []string{"privacy.accountants=[rdp, pdl]"}, "unknown accountant \"pdl\": did you mean pld?"},
		{"fractional integer in an algorithm section", minimal, []string{"optimizer.algorithm=modelmix", "optimizer.modelmix.gap=1", "optimizer.modelmix.linf_parts=1.5"}, "--set optimizer.modelmix.linf_parts=1.5: optimizer.modelmix.linf_parts = 1.5: must be a whole number"},
		{"typo in an algorithm section in the file", strings.Replace(minimal, "  noise_multiplier: 1.1\n", "  noise_multiplier: 1.1\n  modelmix:\n    gapp: 1\n", 1), nil, "unknown key optimizer.modelmix.gapp: did you mean optimizer.modelmix.gap?"},
		{"bad delta", minimal, []string{"privacy.delta=2"}, "privacy.delta = 2"},
		{"auto without target", minimal, []string{"optimizer.noise_multiplier=auto"}, "target_epsilon is not set"},
		{"noise word", minimal, []string{"optimizer.noise_multiplier=lots"}, "want a number or auto"},
		{"noise word in the file", strings.Replace(minimal, "noise_multiplier: 1.1", "noise_multiplier: lots", 1), nil, "line 12: noise_multiplier \"lots\": want a number or auto"},
		{"noise as text in --set", minimal, []string{"optimizer.noise_multiplier='8'"}, "--set optimizer.noise_multiplier='8': noise_multiplier \"8\": want a number or auto"},
		{"negative sigma", minimal, []string{"optimizer.noise_multiplier=-1"}, "noise_multiplier = -1"},
		{"a list for the config", "- name: x\n- data: y\n", nil, "line 1: the config must be a section of keys (key: value lines), not a list"},
		{"a list for a section", strings.Replace(minimal, "data:\n  dataset: fashion-mnist\n", "data:\n  - fashion-mnist\n", 1), nil, "data must be a section of keys (key: value lines), not a list"},
		{"noise beyond float32", minimal, []string{"optimizer.noise_multiplier=1e36", "optimizer.clip_norm=1e3"}, "the Gaussian noise's standard deviation σ·C is beyond float32's range"},
		{"algorithm", minimal, []string{"optimizer.algorithm=dp-adam"}, "optimizer.algorithm = \"dp-adam\""},
		{"modelmix momentum", minimal, []string{"optimizer.algorithm=modelmix", "optimizer.update=momentum", "optimizer.momentum=0.9", "optimizer.modelmix.gap=1"}, "momentum or Adam state breaks"},
		{"sgld sampling", minimal, []string{"optimizer.algorithm=dp-sgld", "optimizer.sampling=poisson"}, "must be without-replacement"},
		{"sgd with target", minimal, []string{"optimizer.algorithm=sgd", "privacy.target_epsilon=3"}, "non-private baseline"},
		{"no length", minimal, []string{"training.epochs=0"}, "training.epochs > 0"},
		{"override not kv", minimal, []string{"optimizer.learning_rate"}, "want key.path=value"},
		{"override into scalar", minimal, []string{"name.x=1"}, "--set name.x=1: name is a value, not a section"},
		{"stop not listed", minimal, []string{"privacy.accountants=[rdp]", "privacy.stop_accountant=pld"}, "not among privacy.accountants"},
		{"features kind", minimal, []string{"data.features.kind=pca"}, "data.features.kind = \"pca\""},
		{"features scales", minimal, []string{"data.features.kind=scatternet", "data.features.j=9"}, "data.features: j in 1..6"},
		{"empty", "", nil, "empty"},
		{"not yaml", "a: [", nil, "did not find expected"},
	}
	for _, tt := range tests {
		_, err := ParseConfig([]byte(tt.yaml), tt.overrides)
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%s: error %v, want it to contain %q", tt.name, err, tt.want)
		}
	}
}

func TestOverrides(t *testing.T) {
	cfg, err := ParseConfig([]byte(minimal), []string{
		"optimizer.learning_rate=0.5", "privacy.target_epsilon=3", "optimizer.noise_multiplier=auto",
		"training.steps=7", "privacy.accountants=[pld, rdp]", "output.dir=/tmp/x",
	})
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Optimizer.LearningRate != 0.5 || cfg.Privacy.TargetEpsilon != 3 || !cfg.Optimizer.NoiseMultiplier.Auto ||
		cfg.Training.Steps != 7 || cfg.Privacy.Accountants[0] != "pld" || cfg.Output.Dir != "/tmp/x" {
		t.Errorf("overrides not applied: %+v", cfg)
	}
	// --set training.steps clears the file's training.epochs, and the other way round.
	if cfg.Training.Epochs != 0 {
		t.Errorf("--set training.steps=7 left training.epochs = %v from the file", cfg.Training.Epochs)
	}
	cfg, err = ParseConfig([]byte(strings.Replace(minimal, "epochs: 1", "steps: 100", 1)), []string{"training.epochs=2"})
	if err != nil || cfg.Training.Steps != 0 || cfg.Training.Epochs != 2 {
		t.Errorf("--set training.epochs=2 over a file with steps: %v, steps %d epochs %v", err, cfg.Training.Steps, cfg.Training.Epochs)
	}
}

// A negative target with a calibrated σ is one error, the target's: not also "auto but no
// target".
func TestNegativeTargetIsOneError(t *testing.T) {
	_, err := ParseConfig([]byte(minimal), []string{"optimizer.noise_multiplier=auto", "privacy.target_epsilon=-1"})
	if err == nil || !strings.Contains(err.Error(), "privacy.target_epsilon = -1") || strings.Contains(err.Error(), "is not set") {
		t.Errorf("error %v, want only the negative target's", err)
	}
}

func TestImageFolderKeys(t *testing.T) {
	for _, tc := range []struct {
		name string
		sets []string
		want string // "" for a valid config
	}{
		{"image-folder", []string{"data.dataset=image-folder", "data.path=/x/images.tar.gz", "data.normalize=unit", "data.classes=[b, a]"}, ""},
		{"cifar10-jpeg path", []string{"data.dataset=cifar10-jpeg", "data.path=/x/cifar10-jpeg.tar.gz"}, ""},
		{"no path", []string{"data.dataset=image-folder", "data.normalize=unit"}, "data.path is missing"},
		{"path elsewhere", []string{"data.path=/x"}, "data.path is for image-folder and cifar10-jpeg, not fashion-mnist: use data.dir"},
		{"path and dir", []string{"data.dataset=image-folder", "data.path=/x", "data.dir=/y", "data.normalize=unit"}, "keep one"},
		{"classes elsewhere", []string{"data.dataset=cifar10-jpeg", "data.classes=[a]"}, "data.classes is for image-folder datasets"},
		{"standard", []string{"data.dataset=image-folder", "data.path=/x"}, "set data.normalize: unit"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := ParseConfig([]byte(minimal), tc.sets)
			switch {
			case tc.want == "" && err != nil:
				t.Errorf("refused: %v", err)
			case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
				t.Errorf("error %v, want %q", err, tc.want)
			}
		})
	}
}
