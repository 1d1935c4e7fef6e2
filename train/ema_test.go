package train

import (
	"context"
	"math"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/dptrain/dptrain/models"
	"github.com/dptrain/dptrain/train/config"
	"github.com/dptrain/dptrain/train/rundir"
)

// With training.ema the released model is the average of the iterates, with the decay's
// warm-up, computed here independently from every iterate the run took; evaluations use it; the
// summary says so; and a run interrupted and resumed releases the same average.
func TestEMAReleasesTheAverageOfTheIterates(t *testing.T) {
	const decay = 0.9
	dir := t.TempDir()
	cfg, err := config.ParseConfig([]byte(synthetic), []string{"seed=4", "training.ema=0.9", "training.steps=25", "output.dir=" + dir + "/whole"})
	if err != nil {
		t.Fatal(err)
	}
	var tr *Trainer
	var iterates [][]float32
	record := HookFunc(func(*StepInfo) error {
		iterates = append(iterates, slices.Clone(tr.model.Params()))
		return nil
	})
	if tr, err = New(context.Background(), cfg, Options{Hooks: []Hook{record}}); err != nil {
		t.Fatal(err)
	}
	avg := slices.Clone(tr.model.Params())
	sum, err := tr.Run(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	for k, it := range iterates {
		d := min(decay, float64(2+k)/float64(11+k))
		for i := range avg {
			avg[i] = float32(d*float64(avg[i]) + (1-d)*float64(it[i]))
		}
	}
	saved, err := models.Load(filepath.Join(dir, "whole", rundir.ModelFile))
	if err != nil {
		t.Fatal(err)
	}
	for i, v := range saved.Params() {
		if math.Abs(float64(v-avg[i])) > 1e-6*(1+math.Abs(float64(avg[i]))) {
			t.Fatalf("parameter %d of the released model is %v, the average of the iterates %v", i, v, avg[i])
		}
	}
	if slices.Equal(saved.Params(), iterates[len(iterates)-1]) {
		t.Error("the released model is the last iterate")
	}
	if sum.EMA != decay {
		t.Errorf("summary ema = %v", sum.EMA)
	}

	// Interrupted after step 10 (a checkpoint there) and resumed: the same released average.
	cfg2, err := config.ParseConfig([]byte(synthetic), []string{"seed=4", "training.ema=0.9", "training.steps=25", "output.dir=" + dir + "/resumed"})
	if err != nil {
		t.Fatal(err)
	}
	interruptAndResume(t, cfg2, nil, 10)
	resumed, err := models.Load(filepath.Join(dir, "resumed", rundir.ModelFile))
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(resumed.Params(), saved.Params()) {
		t.Error("a resumed run released another average")
	}
}

// The average of every iterate is not covered by a bound on the last iterate alone: a
// hidden-state accountant is refused with training.ema, naming the key; an invalid decay is
// refused by name.
func TestEMARefusals(t *testing.T) {
	// DP-SGLD with its hidden-state accountant alone: accepted without an average.
	sgldHidden := []string{"optimizer.algorithm=dp-sgld", "optimizer.update=sgd", "model.kind=logreg", "data.feature_norm=1",
		"optimizer.sampling=without-replacement", "optimizer.learning_rate=0.5", "optimizer.noise_multiplier=0.05",
		"optimizer.dp_sgld.regularization=0.01", "privacy.accountants=[sgld]", "privacy.release=final"}
	cfg, err := config.ParseConfig([]byte(synthetic), append(sgldHidden, "output.dir="+t.TempDir()))
	if err != nil {
		t.Fatal(err)
	}
	if tr, err := New(context.Background(), cfg, Options{}); err != nil {
		t.Fatalf("the hidden-state run without training.ema: %v", err)
	} else {
		tr.Close()
	}
	for _, tc := range []struct {
		sets []string
		want string
	}{
		{[]string{"training.ema=1"}, "training.ema = 1"},
		{[]string{"training.ema=-0.5"}, "training.ema = -0.5"},
		{append([]string{"training.ema=0.99"}, sgldHidden...), "training.ema releases an average"},
	} {
		cfg, err := config.ParseConfig([]byte(synthetic), append(tc.sets, "output.dir="+t.TempDir()))
		if err == nil {
			_, err = New(context.Background(), cfg, Options{})
		}
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%v: %v, want an error containing %q", tc.sets, err, tc.want)
		}
	}
}
