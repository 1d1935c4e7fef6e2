package main

import (
	"bytes"
	"image"
	"image/color"
	"image/png"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// writeImages writes n 16×16 grey PNG images per class and split under dir; class b's are
// brighter on the left half, so a model can tell them apart.
func writeImages(t *testing.T, dir string, n int) {
	t.Helper()
	rng := rand.New(rand.NewPCG(1, 2))
	for _, split := range []string{"train", "test"} {
		for ci, class := range []string{"a", "b"} {
			for k := range n {
				img := image.NewGray(image.Rect(0, 0, 16, 16))
				for y := range 16 {
					for x := range 16 {
						v := 60 + rng.IntN(60)
						if ci == 1 && x < 8 {
							v += 100
						}
						img.SetGray(x, y, color.Gray{Y: uint8(v)})
					}
				}
				var b bytes.Buffer
				if err := png.Encode(&b, img); err != nil {
					t.Fatal(err)
				}
				p := filepath.Join(dir, split, class, string(rune('a'+k%26))+strings.Repeat("x", k/26)+".png")
				if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(p, b.Bytes(), 0o644); err != nil {
					t.Fatal(err)
				}
			}
		}
	}
}

func writeConfig(t *testing.T, dir, images string) string {
	t.Helper()
	cfg := `name: datanorm-test
data:
  dataset: image-folder
  path: ` + images + `
  normalize: unit
  features: {kind: scatternet, j: 2, l: 8, groups: 9}
model: {kind: logreg}
optimizer: {algorithm: dp-sgd, update: momentum, momentum: 0.9, learning_rate: 1, batch_size: 20, sampling: poisson, clip_norm: 0.1, noise_multiplier: 1}
privacy: {delta: 1.0e-3, accountants: [rdp, pld], allow_large_delta: true}
training: {steps: 20, eval_every: 0, checkpoint_every: 0}
output: {dir: ` + filepath.Join(dir, "run") + `}
`
	p := filepath.Join(dir, "cfg.yaml")
	if err := os.WriteFile(p, []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// The diagnostic trains end to end on images the test writes, with noisy statistics whose σ it
// calibrates to an all-in ε, and refuses what it cannot do, saying how to fix it.
func TestDataNorm(t *testing.T) {
	dir := t.TempDir()
	t.Setenv("DPTRAIN_DATA", filepath.Join(dir, "cache"))
	images := filepath.Join(dir, "images")
	writeImages(t, images, 40)
	cfg := writeConfig(t, dir, images)
	var out bytes.Buffer
	if err := run(t.Context(), &out, cfg, "noisy", 1, 8, 2, []string{"seed=1"}); err != nil {
		t.Fatal(err)
	}
	// σ is calibrated so that the run and the release meet ε = 2 together; the run alone
	// spends less.
	for _, want := range []string{"statistics noisy (clip 1, noise multiplier 8", "training and the statistics' release: ε[rdp, certified] = 2.000", "NOT private"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("the noisy run printed\n%s\nwithout %q", out.String(), want)
		}
	}
	if strings.Contains(out.String(), "training alone: ε[rdp, certified] = 2.0") {
		t.Errorf("the run alone spends the whole ε: the release was not composed\n%s", out.String())
	}
	out.Reset()
	if err := run(t.Context(), &out, cfg, "exact", 0, 0, 0, []string{"seed=1", "output.dir=" + filepath.Join(dir, "exact")}); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.String(), "no finite ε") {
		t.Errorf("the exact run printed\n%s\nwithout saying it has no finite ε", out.String())
	}
	for _, tc := range []struct {
		name     string
		stats    string
		clip, sn float64
		eps      float64
		over     []string
		want     string
	}{
		{"no seed", "exact", 0, 0, 0, nil, "set one"},
		{"unknown statistics", "approximate", 1, 8, 0, []string{"seed=1"}, "use exact or noisy"},
		{"noisy without clip", "noisy", 0, 8, 0, []string{"seed=1"}, "-clip > 0"},
		{"target with exact", "exact", 0, 0, 3, []string{"seed=1"}, "-epsilon needs -stats noisy"},
		{"target with shuffled batches", "noisy", 1, 8, 3, []string{"seed=1", "optimizer.sampling=shuffled"}, "optimizer.sampling=poisson"},
		{"not scatternet", "exact", 0, 0, 0, []string{"seed=1", "data.features.kind="}, "give a ScatterNet config"},
	} {
		err := run(t.Context(), io.Discard, cfg, tc.stats, tc.clip, tc.sn, tc.eps, append(tc.over, "output.dir="+filepath.Join(dir, tc.name)))
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: error %v, want one saying %q", tc.name, err, tc.want)
		}
	}
}
