package config

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	"gopkg.in/yaml.v3"
)

// A saved model records its preprocessing: the data keys that decide what its inputs look
// like (dataset, normalisation, features, the feature-norm bound), so that `dptrain eval`
// prepares the test inputs exactly as training did instead of trusting flags.

// preprocessingKeys are the data keys recorded; data.dir and data.path (where the files are)
// and the subsets do not change what an input looks like.
func isPreprocessingKey(k string) bool {
	return strings.HasPrefix(k, "data.") && k != "data.dir" && k != "data.path" && k != "data.train_subset" && k != "data.test_subset"
}

// PreprocessingRecord returns the record of cfg's preprocessing, as config keys and values.
func PreprocessingRecord(cfg *Config) (map[string]string, error) {
	c, err := Canonicalize(cfg)
	if err != nil {
		return nil, err
	}
	rec := map[string]string{}
	for k, v := range c {
		if isPreprocessingKey(k) {
			rec[k] = v
		}
	}
	return rec, nil
}

// DataFromRecord rebuilds the data section of a config from a model's preprocessing record,
// with defaults applied.
func DataFromRecord(rec map[string]string) (DataConfig, error) {
	algs := Builtin()
	root := &yaml.Node{Kind: yaml.MappingNode, Tag: "!!map"}
	for _, k := range slices.Sorted(maps.Keys(rec)) {
		if !isPreprocessingKey(k) {
			return DataConfig{}, fmt.Errorf("the model's preprocessing record has the key %q, which is not a data key: the file is from another dptrain or damaged", k)
		}
		if err := algs.applyOverride(root, k+"="+rec[k]); err != nil {
			return DataConfig{}, fmt.Errorf("the model's preprocessing record: %w", err)
		}
	}
	var cfg Config
	if err := root.Decode(&cfg); err != nil {
		return DataConfig{}, fmt.Errorf("the model's preprocessing record: %w", err)
	}
	algs.setDefaults(&cfg)
	return cfg.Data, nil
}

// PreprocessingDiff lists, as "key: recorded → given", the keys on which two records differ.
func PreprocessingDiff(recorded, given map[string]string) []string {
	var out []string
	keys := maps.Clone(recorded)
	maps.Copy(keys, given)
	for _, k := range slices.Sorted(maps.Keys(keys)) {
		if recorded[k] != given[k] {
			out = append(out, KeyChange{Key: k, Old: recorded[k], New: given[k]}.String())
		}
	}
	return out
}
