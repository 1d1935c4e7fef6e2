package config_test

import (
	"fmt"

	"github.com/dptrain/dptrain/train/config"
)

// A config is read strictly, --set overrides are applied on top of the file, and the defaults
// are filled in before it is validated.
func ExampleParseConfig() {
	doc := []byte(`
name: example
data:
  dataset: fashion-mnist
model:
  preset: mlp-784-128-64-32-10
optimizer:
  algorithm: dp-sgd
  learning_rate: 0.1
  batch_size: 256
  clip_norm: 1
  noise_multiplier: 1.1
privacy:
  delta: 1e-5
training:
  epochs: 1
`)
	cfg, err := config.ParseConfig(doc, []string{"optimizer.batch_size=512", "output.dir=/tmp/example"})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(cfg.Optimizer.Algorithm, cfg.Optimizer.BatchSize, cfg.Optimizer.NoiseMultiplier.Value)
	fmt.Println(cfg.Optimizer.Sampling, cfg.Optimizer.Update, cfg.Output.Dir)

	_, err = config.ParseConfig(doc, []string{"optimizer.clipnorm=2"})
	fmt.Println(err)
	// Output:
	// dp-sgd 512 1.1
	// poisson sgd /tmp/example
	// --set optimizer.clipnorm=2: unknown key optimizer.clipnorm: did you mean optimizer.clip_norm? (configs/quickstart.yaml lists every key)
}
