package train

import (
	"context"
	"slices"
	"strings"
	"testing"

	"github.com/dptrain/dptrain/accounting"
	"github.com/dptrain/dptrain/train/config"
)

// mbcdOverrides turn the synthetic run into DP-MBCD on a bias-free ReLU MLP with shuffle-once
// batches (10 per epoch).
var mbcdOverrides = []string{"optimizer.algorithm=dp-mbcd", "optimizer.update=sgd", "model.activation=relu", "model.bias=false",
	"optimizer.sampling=shuffled-once", "optimizer.batch_size=480", "optimizer.learning_rate=0.5", "optimizer.noise_multiplier=50",
	"privacy.accountants=[mbcd,mbcd-certified]", "training.steps=25", "training.checkpoint_every=7"}

// DP-MBCD trains end to end: the paper-labelled mbcd accountant reports ε, the certified one
// reports why it does not cover two released blocks, a calibrated run meets its target,
// and a seeded run killed and resumed (partition and kept auxiliaries restored) ends
// bit-identical to an uninterrupted one.
func TestDPMBCDEndToEnd(t *testing.T) {
	tr, _ := newTrainer(t, mbcdOverrides...)
	sum, err := tr.Run(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if sum.Steps != 25 || len(sum.Epsilon) != 2 {
		t.Fatalf("%d steps, ε %+v", sum.Steps, sum.Epsilon)
	}
	if g := sum.Epsilon[0]; g.Label != accounting.Paper || !(g.Epsilon > 0) {
		t.Errorf("mbcd: %+v, want a positive ε labelled paper", g)
	}
	if g := sum.Epsilon[1]; g.Error == "" || !strings.Contains(g.Error, "one released block") {
		t.Errorf("mbcd-certified: %+v, want its refusal of a second block", g)
	}

	auto, _ := newTrainer(t, append(slices.Clone(mbcdOverrides), "optimizer.noise_multiplier=auto", "privacy.target_epsilon=0.5",
		"privacy.stop_accountant=mbcd", "privacy.stop_on_uncertified_bound=true")...)
	as, err := auto.Run(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if as.Steps != 25 || as.Epsilon[0].Epsilon > 0.5 || as.Epsilon[0].Epsilon < 0.49 {
		t.Errorf("calibrated run: %d steps, ε = %v (σ = %v), want 25 steps at ε just below 0.5", as.Steps, as.Epsilon[0].Epsilon, as.NoiseMultiplier)
	}
	// Calibration scales the whole noise schedule (a linear decrease) through the optimizer's
	// declarer. With η = 0.5 (L_F = 0.5) ε plateaus within 1e-5 of its final value from step
	// 21 on, so the live stop may end the run a few steps early; ε never passes the target.
	lin, _ := newTrainer(t, append(slices.Clone(mbcdOverrides), "optimizer.noise_multiplier=auto", "privacy.target_epsilon=0.5",
		"privacy.stop_accountant=mbcd", "privacy.stop_on_uncertified_bound=true", "optimizer.dp_mbcd.noise_control=linear", "optimizer.dp_mbcd.linear_rate=0.5")...)
	ls, err := lin.Run(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if ls.Steps < 21 || ls.Epsilon[0].Epsilon > 0.5 || ls.Epsilon[0].Epsilon < 0.49 || ls.NoiseMultiplier > as.NoiseMultiplier {
		t.Errorf("calibrated linear schedule: %d steps, ε = %v (σ = %v; constant σ = %v), want ≥ 21 steps at ε just below 0.5 and σ no larger than constant noise's (every factor is ≥ 1)",
			ls.Steps, ls.Epsilon[0].Epsilon, ls.NoiseMultiplier, as.NoiseMultiplier)
	}

	cfg, err := config.ParseConfig([]byte(synthetic), append(slices.Clone(mbcdOverrides), "output.dir="+t.TempDir()))
	if err != nil {
		t.Fatal(err)
	}
	res, _ := killAndResume(t, cfg, nil, 12)
	if !slices.Equal(res.Model().Params(), tr.Model().Params()) {
		t.Error("the resumed DP-MBCD run's parameters differ from the uninterrupted run's")
	}
}

// The non-private baseline runs through the same code, and a model the lifted form does not
// cover is refused naming the keys to change.
func TestMBCDBaselineAndRefusals(t *testing.T) {
	base := append(slices.Clone(mbcdOverrides), "optimizer.algorithm=mbcd", "optimizer.noise_multiplier=0", "privacy.accountants=[]", "optimizer.learning_rate=1", "training.steps=100")
	tr, _ := newTrainer(t, base...)
	sum, err := tr.Run(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if sum.TestAccuracy < 0.5 {
		t.Errorf("non-private MBCD reached %v test accuracy on the synthetic mixture (chance 0.2)", sum.TestAccuracy)
	}
	cfg, err := config.ParseConfig([]byte(synthetic), append(slices.Clone(mbcdOverrides), "model.bias=true", "output.dir="+t.TempDir()))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := New(context.Background(), cfg, Options{}); err == nil || !strings.Contains(err.Error(), "model.bias false") {
		t.Errorf("an MLP with biases: %v", err)
	}
	// Calibration probes every record of the first step: mbcd-certified accepts block 0's
	// record but refuses block 1's, so it must not be picked as the certified stop accountant.
	cfg, err = config.ParseConfig([]byte(synthetic), append(slices.Clone(mbcdOverrides), "optimizer.noise_multiplier=auto", "privacy.target_epsilon=0.5", "output.dir="+t.TempDir()))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := New(context.Background(), cfg, Options{}); err == nil || !strings.Contains(err.Error(), "no configured accountant gives a certified bound") {
		t.Errorf("calibrating DP-MBCD with only mbcd-certified certified: %v", err)
	}
}

// The implicit W-update (Eq. 17) declares the paper's L_F: the paper-labelled mbcd accountant
// accounts for it and the certified one is refused before training.
func TestDPMBCDImplicitPaperOnly(t *testing.T) {
	over := append(slices.Clone(mbcdOverrides), "optimizer.dp_mbcd.w_update=implicit")
	cfg, err := config.ParseConfig([]byte(synthetic), append(slices.Clone(over), "output.dir="+t.TempDir()))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := New(context.Background(), cfg, Options{}); err == nil || !strings.Contains(err.Error(), "mbcd-certified") {
		t.Errorf("implicit update with mbcd-certified listed: %v", err)
	}
	tr, _ := newTrainer(t, append(over, "privacy.accountants=[mbcd]")...)
	sum, err := tr.Run(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if g := sum.Epsilon[0]; g.Label != accounting.Paper || !(g.Epsilon > 0) {
		t.Errorf("implicit run: %+v, want a positive ε labelled paper", g)
	}
}

// DP-SGD with shuffle-once batches on the same MLP: the mbcd accountants refuse it
// (a joint step on a network's weights is not convex: no L_F ≤ 1), and so do the composition
// accountants (no amplification analysis of shuffle-once batches), before training.
func TestDPSGDShuffledOnceNotCovered(t *testing.T) {
	dpsgd := []string{"optimizer.algorithm=dp-sgd", "optimizer.update=sgd", "model.activation=relu", "model.bias=false",
		"optimizer.sampling=shuffled-once", "optimizer.batch_size=480", "optimizer.noise_multiplier=1", "training.steps=5"}
	for _, tc := range []struct{ accountants, want string }{
		{"[mbcd,mbcd-certified]", "a non-convex loss such as DP-SGD"},
		{"[rdp,pld]", "shuffled-once sampling is not covered"},
	} {
		cfg, err := config.ParseConfig([]byte(synthetic), append(slices.Clone(dpsgd), "privacy.accountants="+tc.accountants, "output.dir="+t.TempDir()))
		if err != nil {
			t.Fatal(err)
		}
		if _, err := New(context.Background(), cfg, Options{}); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("accountants %s: %v, want a refusal mentioning %q", tc.accountants, err, tc.want)
		}
	}
}
