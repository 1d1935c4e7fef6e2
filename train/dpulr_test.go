package train

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"

	"github.com/dptrain/dptrain/accounting"
	"github.com/dptrain/dptrain/train/config"
)

// DP-ULR trains end to end from config through the registry in both modes: the ledger declares
// the mode's mechanism, ulr reports ε with the mode's label, and a run learns (test accuracy
// above chance on the 4-class synthetic mixture).
func TestDPULREndToEnd(t *testing.T) {
	for _, tc := range []struct {
		mode, sigma string
		mech        accounting.Mechanism
		label       accounting.Label
	}{
		{"paper", "1", accounting.SampledWithRejectionGaussian, accounting.Paper},
		{"certified", "1", accounting.Gaussian, accounting.Certified},
	} {
		cfg, err := config.ParseConfig([]byte(synthetic), []string{"output.dir=" + t.TempDir(), "optimizer.algorithm=dp-ulr",
			"optimizer.update=adam", "optimizer.learning_rate=0.01", "optimizer.sampling=poisson-with-rejection",
			"optimizer.min_batch_size=120", "optimizer.dp_ulr.mode=" + tc.mode, "optimizer.dp_ulr.copies=4", "optimizer.dp_ulr.sigma=" + tc.sigma,
			"privacy.accountants=[ulr]", "training.steps=60"})
		if err != nil {
			t.Fatal(err)
		}
		tr, err := New(context.Background(), cfg, Options{})
		if err != nil {
			t.Fatal(err)
		}
		sum, err := tr.Run(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		if l := tr.live.Ledger(); len(l) != 1 || l[0].Mechanism != tc.mech || l[0].MinBatchSize != 120 || l[0].Count != 60 {
			t.Errorf("%s: ledger %+v", tc.mode, l)
		}
		if e := sum.Epsilon[0]; e.Error != "" || !(e.Epsilon > 0) || e.Label != tc.label {
			t.Errorf("%s: ε %+v, want a positive ε labelled %s", tc.mode, e, tc.label)
		}
		if sum.TestAccuracy < 0.4 {
			t.Errorf("%s: test accuracy %v after 60 steps, want above 0.4 (chance 0.25)", tc.mode, sum.TestAccuracy)
		}
	}
}

// configs/cifar10-resnet5-dpulr.yaml (the paper's ResNet-5, 35,770 parameters, identity skip)
// trains on generated CIFAR-format files: 2000 training records in data_batch_1..5.
func TestDPULRResNet5OnCIFARFormat(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "cifar-10-batches-bin")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(1, 2))
	write := func(name string, n int) {
		b := make([]byte, 0, n*3073)
		for range n {
			y := rng.IntN(10)
			b = append(b, byte(y))
			for j := range 3072 {
				b = append(b, byte(25*y+rng.IntN(30)+j%7)) // class-dependent brightness
			}
		}
		if err := os.WriteFile(filepath.Join(dir, name), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for i := 1; i <= 5; i++ {
		write(fmt.Sprintf("data_batch_%d.bin", i), 400)
	}
	write("test_batch.bin", 200)
	cfg, err := config.LoadConfig("../configs/cifar10-resnet5-dpulr.yaml", []string{"data.dir=" + filepath.Dir(dir),
		"output.dir=" + t.TempDir(), "optimizer.batch_size=40", "optimizer.min_batch_size=20", "training.steps=3"})
	if err != nil {
		t.Fatal(err)
	}
	tr, err := New(context.Background(), cfg, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if n := len(tr.model.Params()); n != 35770 {
		t.Errorf("ResNet-5 has %d parameters, want 35,770 (reading §6 A9)", n)
	}
	sum, err := tr.Run(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if e := sum.Epsilon[0]; e.Error != "" || !(e.Epsilon > 0) || e.Label != accounting.Paper {
		t.Errorf("ε %+v, want a positive ε labelled paper", e)
	}
}
