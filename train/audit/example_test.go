package audit_test

import (
	"context"
	"fmt"
	"log"
	"os"

	"github.com/dptrain/dptrain/train"
	"github.com/dptrain/dptrain/train/audit"
	"github.com/dptrain/dptrain/train/config"
)

// Auditing a DP-SGD run on the synthetic mixture (seeded: reproducible, so not private) with
// 200 gradient canaries: the empirical lower bound is compared with the ε the accountant
// reported for the same run, and an accountant whose ε were below it would be refuted. An
// audit can refute, never certify.
func ExampleRun() {
	dir, err := os.MkdirTemp("", "audit")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)
	cfg, err := config.ParseConfig([]byte(`
name: audit-example
seed: 5
data: {dataset: synthetic-mixture, normalize: none}
model: {kind: mlp, hidden: [32], activation: tanh}
optimizer: {algorithm: dp-sgd, update: sgd, learning_rate: 0.5, batch_size: 240, clip_norm: 1, noise_multiplier: 1.0}
privacy: {delta: 1.0e-5, accountants: [rdp]}
training: {steps: 200, checkpoint_every: 0}
`), []string{"output.dir=" + dir})
	if err != nil {
		log.Fatal(err)
	}
	rep, err := audit.Run(context.Background(), cfg, audit.Options{Canaries: 200, Threat: audit.AllIterates}, train.Options{})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Printf("%s audit, %d canaries (%d included)\n", rep.Threat, rep.Canaries, rep.Included)
	for _, v := range rep.Modes {
		fmt.Printf("%s: ε = %.2f, ε_lower = %.2f: refuted %v\n", v.Mode, v.Epsilon, rep.Bound.Epsilon, v.Refuted)
	}
	// Output:
	// all-iterates audit, 200 canaries (105 included)
	// rdp: ε = 5.37, ε_lower = 0.00: refuted false
}
