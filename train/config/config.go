package config

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"strings"

	"gopkg.in/yaml.v3"

	"github.com/dptrain/dptrain/algorithm"
)

// Config is a training run, as read from a YAML file. Every field is documented in
// configs/quickstart.yaml. Unknown keys are errors: a typo must not silently fall back to a
// default that changes the privacy of a run.
type Config struct {
	// Name labels the run in logs and reports.
	Name string `yaml:"name"`
	// Seed, when set, makes the run reproducible: sampling and noise come from a seeded
	// generator instead of a cryptographically seeded one, and the run is not for release.
	// A run directory keeps it in private/seed.yaml, never in its public config.yaml.
	Seed *uint64 `yaml:"seed,omitempty"`

	Data      DataConfig                `yaml:"data"`
	Model     ModelConfig               `yaml:"model"`
	Optimizer algorithm.OptimizerConfig `yaml:"optimizer"`
	Privacy   PrivacyConfig             `yaml:"privacy"`
	Training  TrainingConfig            `yaml:"training"`
	Output    OutputConfig              `yaml:"output"`
}

// DataConfig selects the dataset and its preprocessing.
type DataConfig struct {
	// Dataset is a name known to data (mnist, fashion-mnist, cifar10, cifar10-jpeg,
	// image-folder, synthetic-...).
	Dataset string `yaml:"dataset"`
	// Dir is an explicit directory to read the files from; empty searches the usual places.
	Dir string `yaml:"dir"`
	// Path is the folder or .tar.gz archive of <split>/<class>/<image> JPEG or PNG files that
	// an image-folder dataset reads (data.ReadImageFolder); cifar10-jpeg takes it too.
	Path string `yaml:"path"`
	// Classes lists an image-folder dataset's class folders in label order; empty means the
	// sorted class folders.
	Classes []string `yaml:"classes"`
	// Normalize is "standard" (per-dataset mean/std), "unit" ([0,1]) or "none".
	Normalize string `yaml:"normalize"`
	// Features, when set, replaces the images by data-independent features before
	// FeatureNorm is applied.
	Features FeaturesConfig `yaml:"features"`
	// FeatureNorm, when > 0, scales every example to l2 norm at most FeatureNorm: a
	// per-record, data-independent map that hidden-state accountants' constants rely on.
	FeatureNorm float64 `yaml:"feature_norm"`
	// TrainSubset, when > 0, uses only the first TrainSubset training examples (quick runs).
	// The accountant sees the subset's size as n.
	TrainSubset int `yaml:"train_subset"`
	// TestSubset, when > 0, evaluates on the first TestSubset test examples.
	TestSubset int `yaml:"test_subset"`
	// Augment, when set, trains with augmentation multiplicity: random crops and flips of
	// every image, several copies per example, their gradients averaged before clipping.
	Augment AugmentConfig `yaml:"augment"`
}

// FeaturesConfig selects a fixed feature extractor. It looks at no data, so it costs no
// privacy.
type FeaturesConfig struct {
	// Kind is "" (raw inputs) or "scatternet": the 2-D scattering transform (data/scattering;
	// Tramèr & Boneh 2021), e.g. 81 channels of 7×7 for 28×28 images.
	Kind string `yaml:"kind"`
	// J and L are the scattering scales and angles (default 2 and 8).
	J int `yaml:"j"`
	L int `yaml:"l"`
	// Groups, when > 0, normalises each example's features by GroupNorm over Groups groups of
	// channels, without affine parameters (per example, data-independent).
	Groups int `yaml:"groups"`
}

// ModelConfig selects the network: a preset, or a kind with its sizes.
type ModelConfig struct {
	// Preset is a named architecture (cnn-tramer-boneh, lenet5, mlp-784-128-64-32-10,
	// resnet20-gn) or empty.
	Preset string `yaml:"preset"`
	// Kind is logreg, mlp or cnn when Preset is empty.
	Kind       string        `yaml:"kind"`
	Hidden     []int         `yaml:"hidden"`
	Activation string        `yaml:"activation"`
	Layers     []LayerConfig `yaml:"layers"`
	Bias       *bool         `yaml:"bias"`
	// Engine is auto (default), direct or graph: how passes run (models.Spec.Engine).
	Engine string `yaml:"engine"`
	// WeightStandardization standardises every conv layer's weights per output channel in the
	// forward pass (Qiao et al.; De et al. 2022, with GroupNorm): a reparametrisation that
	// leaves clipping and accounting unchanged. An error on a model without conv layers
	// (models.Spec.WeightStandardization).
	WeightStandardization bool `yaml:"weight_standardization"`
}

// LayerConfig is one layer of a CNN given as a list of layers.
type LayerConfig struct {
	Type    string `yaml:"type"` // conv2d, maxpool, avgpool, flatten, dense, relu, tanh, gelu, groupnorm
	Out     int    `yaml:"out"`
	Kernel  int    `yaml:"kernel"`
	Stride  int    `yaml:"stride"`
	Padding int    `yaml:"padding"`
	Groups  int    `yaml:"groups"`
}

// PrivacyConfig is the privacy target and the accountants to run live.
type PrivacyConfig struct {
	// Delta is δ of the (ε, δ) guarantee; it must be below 1/n for the run's n (a larger δ
	// allows publishing a few records outright) unless AllowLargeDelta is set.
	Delta float64 `yaml:"delta"`
	// AllowLargeDelta accepts δ ≥ 1/n (for experiments that compare with a paper using one).
	AllowLargeDelta bool `yaml:"allow_large_delta"`
	// TargetEpsilon, when > 0, stops training before the step that would exceed it (under
	// StopAccountant) and is the target of noise calibration.
	TargetEpsilon float64 `yaml:"target_epsilon"`
	// Accountants lists the modes reported live after every step.
	Accountants []string `yaml:"accountants"`
	// StopAccountant is the mode whose ε governs stopping and calibration (default: the first
	// certified accountant that covers the run, rdp before pld; see dptrain.Privacy). A paper or
	// approximate accountant may govern only with StopOnUncertifiedBound.
	StopAccountant string `yaml:"stop_accountant"`
	// StopOnUncertifiedBound lets a paper or approximate accountant govern stopping and
	// calibration; every report of the run then says the target was met under that bound,
	// next to the certified ε of the same run.
	StopOnUncertifiedBound bool `yaml:"stop_on_uncertified_bound"`
	// AllowNoGuarantee lets a private run train although no configured accountant covers it
	// (New fails otherwise); every ε of such a run is null with the accountant's reason.
	AllowNoGuarantee bool `yaml:"allow_no_guarantee"`
	// Release is what the run publishes: "final" (default: only the final model; the
	// hidden-state accountants apply) or "all-iterates" (every intermediate model may be
	// seen; only composition accountants apply). Checkpoints and training metrics are for the
	// operator and are not covered by either: they must not be published.
	Release string `yaml:"release"`
}

// TrainingConfig is the length of the run and its cadences.
type TrainingConfig struct {
	Epochs float64 `yaml:"epochs"`
	// Steps, when > 0, overrides Epochs.
	Steps int `yaml:"steps"`
	// EvalEvery evaluates on the test set every EvalEvery steps (0: at the end only).
	EvalEvery int `yaml:"eval_every"`
	// CheckpointEvery writes a checkpoint every CheckpointEvery steps (0: at the end only).
	CheckpointEvery int `yaml:"checkpoint_every"`
	// KeepCheckpoints is how many checkpoints (checkpoint-<step>.dpt) are kept, newest first
	// (default 2); checkpoint.dpt is always the newest.
	KeepCheckpoints int `yaml:"keep_checkpoints"`
	// LogEvery logs a line every LogEvery steps.
	LogEvery int `yaml:"log_every"`
	// PrivacyEvery computes ε in every mode for the metrics and progress every PrivacyEvery
	// steps (and at evaluations and the end). 0 means every step, or every LogEvery steps when
	// pld or chien-li is listed (their queries cost milliseconds to a second). The stopping check runs before every
	// step regardless.
	PrivacyEvery int `yaml:"privacy_every"`
	// EMA, when in (0, 1), releases the exponential moving average of the iterates with this
	// decay instead of the last iterate (evaluations use it too). It is post-processing of
	// every iterate: the composition accountants cover it, the hidden-state ones do not.
	EMA float64 `yaml:"ema"`
}

// OutputConfig says where a run writes.
type OutputConfig struct {
	Dir string `yaml:"dir"`
}

// LoadConfig reads a YAML config file, applies overrides of the form "key.path=value" (as given
// to --set), fills defaults and validates the result against the Builtin algorithms.
func LoadConfig(path string, overrides []string) (*Config, error) {
	return Builtin().LoadConfig(path, overrides)
}

// ParseConfig is LoadConfig on the bytes of a file.
func ParseConfig(b []byte, overrides []string) (*Config, error) {
	return Builtin().ParseConfig(b, overrides)
}

// LoadConfig is LoadConfig for the algorithms of r.
func (r *Algorithms) LoadConfig(path string, overrides []string) (*Config, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("config: %w", err)
	}
	cfg, err := r.ParseConfig(b, overrides)
	if err != nil {
		return nil, fmt.Errorf("config %s: %w", path, err)
	}
	return cfg, nil
}

// ParseConfig is ParseConfig for the algorithms of r.
func (r *Algorithms) ParseConfig(b []byte, overrides []string) (*Config, error) {
	var root yaml.Node
	if err := yaml.Unmarshal(b, &root); err != nil {
		return nil, err
	}
	if emptyDocument(&root) {
		return nil, errors.New("the file is empty (it holds no settings): start from configs/quickstart.yaml")
	}
	// Check and decode the file as written first, so that errors carry its own line numbers.
	if err := r.checkDocument(&root); err != nil {
		return nil, err
	}
	cfg := new(Config)
	if err := decodeStrict(b, cfg); err != nil {
		return nil, err
	}
	if len(overrides) > 0 {
		set := map[string]string{}
		for _, o := range overrides {
			key, val, _ := strings.Cut(o, "=")
			if strings.TrimSpace(key) == "output.dir" && emptyValue(val) {
				return nil, fmt.Errorf("--set %s: output.dir is empty: give the run's directory, e.g. --set output.dir=runs/NAME (without --set output.dir the run goes to runs/<name>)", o)
			}
			for _, other := range clearedBy(key) {
				if prev, ok := set[other]; ok {
					return nil, fmt.Errorf("--set %s and --set %s: give the run's length once, in epochs or in steps", prev, o)
				}
			}
			set[key] = o
		}
		for _, o := range overrides {
			if err := r.applyOverride(&root, o); err != nil {
				return nil, err
			}
		}
		var buf bytes.Buffer
		if err := yaml.NewEncoder(&buf).Encode(&root); err != nil {
			return nil, err
		}
		cfg = new(Config)
		if err := decodeStrict(buf.Bytes(), cfg); err != nil {
			return nil, fmt.Errorf("after --set overrides: %w", err)
		}
	}
	r.setDefaults(cfg)
	if err := r.Validate(cfg); err != nil {
		return nil, err
	}
	return cfg, nil
}

// emptyDocument reports whether root, a parsed YAML file, holds no settings: no document, or
// one that is only "---", "null" or "~" (comments aside).
func emptyDocument(root *yaml.Node) bool {
	if root.Kind == 0 {
		return true
	}
	if root.Kind == yaml.DocumentNode && len(root.Content) == 1 {
		n := root.Content[0]
		return n.Kind == yaml.ScalarNode && n.Tag == "!!null"
	}
	return root.Kind == yaml.DocumentNode && len(root.Content) == 0
}

// emptyValue reports whether an override's value is empty or YAML null.
func emptyValue(v string) bool {
	switch strings.TrimSpace(v) {
	case "", "~", "null", "Null", "NULL", `""`, "''":
		return true
	}
	return false
}

// applyOverride sets key.path=value in a YAML document, creating mappings as needed. The value
// is parsed as YAML, so numbers, booleans, lists ([a, b]) and "auto" work as in a file.
func (r *Algorithms) applyOverride(root *yaml.Node, o string) error {
	key, val, ok := strings.Cut(o, "=")
	if !ok || key == "" {
		return fmt.Errorf("--set %q: want key.path=value, e.g. --set optimizer.learning_rate=0.1", o)
	}
	var v yaml.Node
	if err := yaml.Unmarshal([]byte(val), &v); err != nil {
		return fmt.Errorf("--set %q: value: %w", o, err)
	}
	value := &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!null", Value: ""}
	if v.Kind == yaml.DocumentNode && len(v.Content) == 1 {
		value = v.Content[0]
	}
	if err := r.checkOverride(o, key, value); err != nil {
		return err
	}
	doc := root
	if doc.Kind == yaml.DocumentNode {
		doc = doc.Content[0]
	}
	for _, other := range clearedBy(key) { // setting epochs clears the file's steps, and so on
		deleteKey(doc, other)
	}
	parts := strings.Split(key, ".")
	m := doc
	for i, p := range parts {
		if m.Kind != yaml.MappingNode {
			return fmt.Errorf("--set %q: %s is not a mapping", o, strings.Join(parts[:i], "."))
		}
		var next *yaml.Node
		for j := 0; j+1 < len(m.Content); j += 2 {
			if m.Content[j].Value == p {
				next = m.Content[j+1]
				if i == len(parts)-1 {
					m.Content[j+1] = value
				}
				break
			}
		}
		if next == nil {
			child := value
			if i < len(parts)-1 {
				child = &yaml.Node{Kind: yaml.MappingNode, Tag: "!!map"}
			}
			m.Content = append(m.Content, &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: p}, child)
			next = child
		}
		m = next
	}
	return nil
}

// deleteKey removes key.path from a mapping node, if present.
func deleteKey(m *yaml.Node, key string) {
	parts := strings.Split(key, ".")
	for i, p := range parts {
		if m.Kind != yaml.MappingNode {
			return
		}
		var next *yaml.Node
		for j := 0; j+1 < len(m.Content); j += 2 {
			if m.Content[j].Value != p {
				continue
			}
			if i == len(parts)-1 {
				m.Content = append(m.Content[:j], m.Content[j+2:]...)
				return
			}
			next = m.Content[j+1]
			break
		}
		if next == nil {
			return
		}
		m = next
	}
}

func decodeStrict(b []byte, cfg *Config) error {
	dec := yaml.NewDecoder(bytes.NewReader(b))
	dec.KnownFields(true)
	if err := dec.Decode(cfg); err != nil {
		return fmt.Errorf("%w (if this is a typo, see configs/quickstart.yaml for every key)", err)
	}
	return nil
}
