package train

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"testing"
	"time"

	"github.com/dptrain/dptrain/data"
	"github.com/dptrain/dptrain/train/config"
)

// cifarArchive builds a CIFAR-10 binary archive (cifar-10-batches-bin/data_batch_1..5.bin and
// test_batch.bin, each record a label byte and 3072 pixel bytes in CHW order) with perBatch
// records per file; an image's red channel is brighter for higher labels, so that a few steps
// can learn something.
func cifarArchive(t *testing.T, perBatch int) []byte {
	t.Helper()
	rng := rand.New(rand.NewPCG(1, 2))
	batch := func() []byte {
		b := make([]byte, 0, perBatch*3073)
		for range perBatch {
			label := rng.IntN(10)
			b = append(b, byte(label))
			for j := range 3072 {
				v := rng.IntN(128)
				if j < 1024 {
					v += 12 * label
				}
				b = append(b, byte(v))
			}
		}
		return b
	}
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	tw := tar.NewWriter(zw)
	names := []string{"data_batch_1.bin", "data_batch_2.bin", "data_batch_3.bin", "data_batch_4.bin", "data_batch_5.bin", "test_batch.bin"}
	tw.WriteHeader(&tar.Header{Name: "cifar-10-batches-bin/", Typeflag: tar.TypeDir, Mode: 0o755})
	for _, n := range names {
		b := batch()
		if err := tw.WriteHeader(&tar.Header{Name: "cifar-10-batches-bin/" + n, Mode: 0o644, Size: int64(len(b)), Typeflag: tar.TypeReg}); err != nil {
			t.Fatal(err)
		}
		tw.Write(b)
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// TestCIFAR10EndToEnd runs the CIFAR-10 path on generated CIFAR-format files: download from a
// local mirror (checked against its SHA-256), read the archive, train the shipped CIFAR-10
// configs (the Tramèr–Boneh CNN with DP-SGD, ResNet-20-GN with ModelMix) for a few steps, and
// evaluate on the test batch.
func TestCIFAR10EndToEnd(t *testing.T) {
	archive := cifarArchive(t, 40)
	const name = "cifar-10-binary.tar.gz"
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/"+name {
			http.NotFound(w, r)
			return
		}
		http.ServeContent(w, r, name, time.Time{}, bytes.NewReader(archive))
	}))
	defer srv.Close()
	spec, err := data.Lookup("cifar10")
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(archive)
	spec.Files = []data.RemoteFile{{Name: name, Size: int64(len(archive)), SHA256: hex.EncodeToString(sum[:])}}
	dir := filepath.Join(t.TempDir(), "cifar10")
	if err := (&data.Downloader{BaseURL: srv.URL}).Fetch(context.Background(), spec, dir); err != nil {
		t.Fatal(err)
	}

	for _, c := range []struct {
		config string
		sets   []string
	}{
		{"../configs/cifar10-cnn-dpsgd.yaml", []string{"optimizer.batch_size=16", "training.steps=2"}},
		{"../configs/cifar10-resnet20-modelmix.yaml", []string{"optimizer.batch_size=8", "training.steps=1"}},
	} {
		t.Run(filepath.Base(c.config), func(t *testing.T) {
			sets := append([]string{"data.dir=" + dir, "seed=1", "data.test_subset=20", "output.dir=" + t.TempDir()}, c.sets...)
			cfg, err := config.LoadConfig(c.config, sets)
			if err != nil {
				t.Fatal(err)
			}
			tr, err := New(context.Background(), cfg, Options{})
			if err != nil {
				t.Fatal(err)
			}
			s, err := tr.Run(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			if s.Dataset != "cifar10" || s.DatasetSize != 200 || s.Steps != cfg.Training.Steps || len(s.Epsilon) == 0 {
				t.Fatalf("summary %+v: want cifar10 with 200 training examples, %d steps, ε reported", s, cfg.Training.Steps)
			}
			if s.TestAccuracy < 0 || s.TestAccuracy > 1 || s.TestLoss <= 0 {
				t.Errorf("evaluation: accuracy %g, loss %g", s.TestAccuracy, s.TestLoss)
			}
			for _, e := range s.Epsilon {
				if e.Error == "" && e.Epsilon > cfg.Privacy.TargetEpsilon {
					t.Errorf("%s: ε %g above the target %g", e.Mode, e.Epsilon, cfg.Privacy.TargetEpsilon)
				}
			}
			t.Log(fmt.Sprintf("%s: %d steps, %.1f ms/step, accuracy %.3f", c.config, s.Steps, s.MsPerStep, s.TestAccuracy))
		})
	}
}
