package train

import (
	"context"
	"errors"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/dptrain/dptrain/data"
	"github.com/dptrain/dptrain/data/scattering"
	"github.com/dptrain/dptrain/train/config"
	"github.com/dptrain/dptrain/train/internal/augment"
)

// imageBlocks is a dataset of 1×8×8 images: noise, and a bright 2×4 block whose row says the
// class (rows 1–2, 3–4 or 5–6; columns 2–5, symmetric under a horizontal flip).
func imageBlocks(train, test int) *data.Dataset {
	r := rand.New(rand.NewPCG(11, 12))
	split := func(n int) *data.Split {
		s := &data.Split{X: make([]float32, n*64), Y: make([]int32, n), N: n, D: 64}
		for i := range n {
			c := r.IntN(3)
			s.Y[i] = int32(c)
			x := s.X[i*64 : (i+1)*64]
			for j := range x {
				x[j] = float32(0.3 * r.NormFloat64())
			}
			for y := 2*c + 1; y <= 2*c+2; y++ {
				for col := 2; col <= 5; col++ {
					x[y*8+col] += 1.5
				}
			}
		}
		return s
	}
	return &data.Dataset{Name: "blocks", Shape: []int{1, 8, 8}, Classes: 3, Train: split(train), Test: split(test), Source: "generated: blocks"}
}

// augmented are the overrides of the synthetic config for a run on imageBlocks.
var augmented = []string{"data.augment.multiplicity=2", "data.augment.crop_padding=1", "data.augment.flip=true",
	"optimizer.batch_size=64", "optimizer.noise_multiplier=0.5", "training.steps=24", "training.checkpoint_every=8"}

func runBlocks(t *testing.T, sets []string, hooks ...Hook) (*Trainer, *Summary, error) {
	t.Helper()
	cfg, err := config.ParseConfig([]byte(synthetic), append(slices.Clone(sets), "output.dir="+t.TempDir()))
	if err != nil {
		t.Fatal(err)
	}
	tr, err := New(context.Background(), cfg, Options{Dataset: imageBlocks(600, 300), Hooks: hooks})
	if err != nil {
		t.Fatal(err)
	}
	sum, err := tr.Run(context.Background())
	return tr, sum, err
}

// A seeded run with multiplicity 2 trains, is reproducible, resumes bit-identical after a
// kill, declares the same records as the run without augmentation, and is not that run.
func TestAugmentationMultiplicityEndToEnd(t *testing.T) {
	tr, sum, err := runBlocks(t, augmented)
	if err != nil {
		t.Fatal(err)
	}
	if sum.Steps != 24 || sum.TestAccuracy < 0.6 {
		t.Errorf("%d steps, test accuracy %v: want 24 steps and well above chance (1/3)", sum.Steps, sum.TestAccuracy)
	}
	again, _, err := runBlocks(t, augmented)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(tr.Model().Params(), again.Model().Params()) {
		t.Error("two runs with the same seed differ")
	}

	// Killed after step 13 (checkpoint at 8) and resumed: the augmentations of steps 9 to 13
	// are drawn again as they were.
	cfg, err := config.ParseConfig([]byte(synthetic), append(slices.Clone(augmented), "output.dir="+t.TempDir()))
	if err != nil {
		t.Fatal(err)
	}
	kill := HookFunc(func(s *StepInfo) error {
		if s.Step == 13 {
			return errCrash
		}
		return nil
	})
	killed, err := New(context.Background(), cfg, Options{Dataset: imageBlocks(600, 300), Hooks: []Hook{kill}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := killed.Run(context.Background()); !errors.Is(err, errCrash) {
		t.Fatalf("error %v, want the simulated kill", err)
	}
	resumed, err := New(context.Background(), cfg, Options{Dataset: imageBlocks(600, 300), Resume: true})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := resumed.Run(context.Background()); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(tr.Model().Params(), resumed.Model().Params()) {
		t.Error("the resumed run differs from the uninterrupted one")
	}

	plain, _, err := runBlocks(t, append(slices.Clone(augmented), "data.augment.multiplicity=0", "data.augment.crop_padding=0", "data.augment.flip=false"))
	if err != nil {
		t.Fatal(err)
	}
	if slices.Equal(tr.Model().Params(), plain.Model().Params()) {
		t.Error("the augmented run equals the run without augmentation")
	}
	if !slices.Equal(tr.live.Ledger(), plain.live.Ledger()) {
		t.Errorf("augmentation changed the declared records:\n%+v\n%+v", tr.live.Ledger(), plain.live.Ledger())
	}
}

// data.augment's errors name the key and the fix: in the config, and against the data.
func TestAugmentRefusals(t *testing.T) {
	for _, tc := range []struct {
		sets []string
		want string
	}{
		{[]string{"data.augment.multiplicity=-1"}, "data.augment.multiplicity = -1: want 1 to 64"},
		{[]string{"data.augment.multiplicity=65", "data.augment.flip=true"}, "data.augment.multiplicity = 65"},
		{[]string{"data.augment.multiplicity=4"}, "the copies would be identical; set crop_padding"},
		{[]string{"data.augment.crop_padding=-2"}, "data.augment.crop_padding = -2"},
		{[]string{"data.augment.flip=true", "data.features.kind=scatternet", "data.feature_norm=1"}, "remove one of data.augment and data.feature_norm"},
		{[]string{"data.augment.flip=true", "optimizer.algorithm=dp-ulr", "optimizer.sampling=poisson-with-rejection"}, "optimizer.algorithm dp-ulr reads the model other than through its per-example gradient sums"},
	} {
		_, err := config.ParseConfig([]byte(synthetic), append(tc.sets, "output.dir="+t.TempDir()))
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%v: error %v, want one containing %q", tc.sets, err, tc.want)
		}
	}
	for _, tc := range []struct {
		sets []string
		ds   *data.Dataset
		want string
	}{
		{[]string{"data.augment.flip=true"}, nil, "has examples of shape [20], not images C×H×W: remove data.augment"},
		{[]string{"data.augment.crop_padding=5"}, imageBlocks(600, 10), "data.augment.crop_padding = 5: want 0 to 4"},
		{[]string{"data.augment.crop_padding=3", "data.augment.flip=true", "data.features.kind=scatternet", "model.kind=logreg"}, imageBlocks(60, 10),
			"make 98 views of every image, whose features would all be kept: the most is 50; lower crop_padding"},
	} {
		t.Setenv(data.CacheEnv, t.TempDir())
		cfg, err := config.ParseConfig([]byte(synthetic), append(tc.sets, "output.dir="+t.TempDir(), "optimizer.batch_size=64"))
		if err != nil {
			t.Fatal(err)
		}
		_, err = New(context.Background(), cfg, Options{Dataset: tc.ds})
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%v: error %v, want one containing %q", tc.sets, err, tc.want)
		}
	}
}

// In a data-parallel run each rank augments its own share as the single process does: the
// ranks agree, and match one process up to float32 rounding of the reduction.
func TestAugmentationDataParallel(t *testing.T) {
	dir := t.TempDir()
	opts := func(int) Options { return Options{Dataset: imageBlocks(600, 300)} }
	sets := append(slices.Clone(augmented), "seed=3", "training.steps=8")
	_, one, errs := runRanks(t, 1, append(slices.Clone(sets), "output.dir="+dir+"/one"), opts)
	noErrors(t, errs)
	_, two, errs := runRanks(t, 2, append(slices.Clone(sets), "output.dir="+dir+"/two"), opts)
	noErrors(t, errs)
	if !slices.Equal(two[0], two[1]) {
		t.Fatal("the two ranks ended with different parameters")
	}
	var worst float64
	for i, v := range one[0] {
		worst = max(worst, math.Abs(float64(v-two[0][i]))/(1+math.Abs(float64(v))))
	}
	if worst > 1e-4 {
		t.Errorf("2 ranks differ from one process by %v (relative) after 8 steps", worst)
	}
}

// With scattering features, data.augment averages over the features of each image's views:
// the training rows hold the features of the image and of its mirror image (checked against
// the transform run on mirrored images), the test rows the image's alone; the run trains,
// declares the records of the plain run, and is not that run.
func TestAugmentFeatureViews(t *testing.T) {
	t.Setenv(data.CacheEnv, t.TempDir())
	sets := append(slices.Clone(augmented), "data.augment.crop_padding=0", "data.features.kind=scatternet", "data.features.groups=27",
		"model.kind=logreg", "optimizer.learning_rate=2", "optimizer.clip_norm=0.1", "optimizer.noise_multiplier=0.3")
	tr, sum, err := runBlocks(t, sets)
	if err != nil {
		t.Fatal(err)
	}
	if sum.Steps != 24 || sum.TestAccuracy < 0.6 {
		t.Errorf("%d steps, test accuracy %v: want 24 steps and well above chance (1/3)", sum.Steps, sum.TestAccuracy)
	}
	img := imageBlocks(600, 300)
	opts := scattering.Options{J: 2, L: 8, Groups: 27}
	feat, err := scattering.Features(context.Background(), img, opts)
	if err != nil {
		t.Fatal(err)
	}
	mirror := img.Clone()
	c := augment.Config{Flip: true, Shape: [3]int{1, 8, 8}}
	for i := range mirror.Train.N {
		c.Apply(mirror.Train.Row(i), img.Train.Row(i), augment.Transform{Flip: true})
	}
	mfeat, err := scattering.Features(context.Background(), mirror, opts)
	if err != nil {
		t.Fatal(err)
	}
	d := feat.Train.D
	if tr.train.D != 2*d || tr.test.D != d {
		t.Fatalf("training rows of %d values and test rows of %d, want 2·%d and %d", tr.train.D, tr.test.D, d, d)
	}
	for i := range feat.Train.N {
		row := tr.train.Row(i)
		if !slices.Equal(row[:d], feat.Train.Row(i)) || !slices.Equal(row[d:], mfeat.Train.Row(i)) {
			t.Fatalf("training row %d is not [features of image %d, features of its mirror]", i, i)
		}
	}
	if !slices.Equal(tr.test.X, feat.Test.X) {
		t.Error("the test rows are not the images' features")
	}
	plain, _, err := runBlocks(t, append(slices.Clone(sets), "data.augment.multiplicity=1", "data.augment.flip=false"))
	if err != nil {
		t.Fatal(err)
	}
	if slices.Equal(tr.Model().Params(), plain.Model().Params()) {
		t.Error("the run over views equals the run without them")
	}
	if !slices.Equal(tr.live.Ledger(), plain.live.Ledger()) {
		t.Errorf("the views changed the declared records:\n%+v\n%+v", tr.live.Ledger(), plain.live.Ledger())
	}
}
