package train

import (
	"context"
	"errors"
	"math"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/dptrain/dptrain/data"
	"github.com/dptrain/dptrain/internal/mpi"
	"github.com/dptrain/dptrain/train/config"
)

// runRanks trains cfg (parsed anew for each rank from the synthetic config and sets) on k
// in-process ranks at once, with opts(rank) as each rank's options, and returns rank 0's
// summary, every rank's final parameters and every rank's error. A rank that fails leaves
// the group, so that the others fail instead of waiting for it.
func runRanks(t *testing.T, k int, sets []string, opts func(rank int) Options) (*Summary, [][]float32, []error) {
	t.Helper()
	cs := mpi.Local(k)
	params, errs := make([][]float32, k), make([]error, k)
	var sum *Summary
	var wg sync.WaitGroup
	for r := range k {
		cfg, err := config.ParseConfig([]byte(synthetic), sets)
		if err != nil {
			t.Fatal(err)
		}
		o := Options{}
		if opts != nil {
			o = opts(r)
		}
		o.Comm = cs[r]
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer func() {
				if errs[r] != nil {
					cs[r].Close()
				}
			}()
			tr, err := New(context.Background(), cfg, o)
			if err != nil {
				errs[r] = err
				return
			}
			s, err := tr.Run(context.Background())
			if errs[r] = err; err == nil {
				params[r] = slices.Clone(tr.model.Params())
				if r == 0 {
					sum = s
				} else if s != nil {
					errs[r] = errors.New("a rank other than 0 returned a summary")
				}
			}
		}()
	}
	wg.Wait()
	return sum, params, errs
}

func noErrors(t *testing.T, errs []error) {
	t.Helper()
	for r, err := range errs {
		if err != nil {
			t.Fatalf("rank %d: %v", r, err)
		}
	}
}

// A seeded data-parallel run: every rank ends with the same parameters, the run repeats
// bit for bit on the same number of ranks, and it is the single-process run up to float32
// rounding, with the same steps and the same ε (the records are the single-process ones).
func TestDataParallelMatchesOneProcess(t *testing.T) {
	for _, tc := range []struct {
		name string
		sets []string
	}{
		{"dp-sgd", []string{"optimizer.algorithm=dp-sgd"}},
		{"dp-sgld", []string{"optimizer.algorithm=dp-sgld", "optimizer.update=sgd", "model.kind=logreg", "data.feature_norm=1",
			"optimizer.sampling=without-replacement", "optimizer.learning_rate=0.5", "optimizer.noise_multiplier=0.05",
			"optimizer.dp_sgld.regularization=0.01", "privacy.accountants=[sgld, rdp]"}},
		{"modelmix", []string{"optimizer.algorithm=modelmix", "optimizer.update=sgd", "optimizer.modelmix.gap=0.001", "optimizer.modelmix.linf_parts=4"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			sets := append([]string{"seed=3", "training.steps=12", "privacy.accountants=[rdp, pld]"}, tc.sets...)
			one, oneParams, errs := runRanks(t, 1, append(sets, "output.dir="+dir+"/one"), nil)
			noErrors(t, errs)
			two, twoParams, errs := runRanks(t, 2, append(sets, "output.dir="+dir+"/two"), nil)
			noErrors(t, errs)
			again, againParams, errs := runRanks(t, 2, append(sets, "output.dir="+dir+"/again"), nil)
			noErrors(t, errs)
			if !slices.Equal(twoParams[0], twoParams[1]) {
				t.Fatal("the two ranks ended with different parameters")
			}
			if !slices.Equal(twoParams[0], againParams[0]) {
				t.Error("a seeded 2-rank run did not repeat exactly")
			}
			var worst float64
			for i, v := range oneParams[0] {
				worst = max(worst, math.Abs(float64(v-twoParams[0][i]))/(1+math.Abs(float64(v))))
			}
			t.Logf("largest relative difference from one process after 12 steps: %.3g", worst)
			if worst > 1e-4 {
				t.Errorf("2 ranks differ from one process by %v (relative) after 12 steps", worst)
			}
			if one.Steps != two.Steps || len(one.Epsilon) != len(two.Epsilon) {
				t.Fatalf("steps %d vs %d", one.Steps, two.Steps)
			}
			for i := range one.Epsilon {
				if one.Epsilon[i].Epsilon != two.Epsilon[i].Epsilon {
					t.Errorf("ε[%s] = %v on 2 ranks, %v in one process", one.Epsilon[i].Mode, two.Epsilon[i].Epsilon, one.Epsilon[i].Epsilon)
				}
			}
			if math.Abs(one.TestAccuracy-two.TestAccuracy) > 0.02 || again.TestAccuracy != two.TestAccuracy {
				t.Errorf("accuracy: one process %v, 2 ranks %v and %v", one.TestAccuracy, two.TestAccuracy, again.TestAccuracy)
			}
		})
	}
}

// Rank 0's privacy target stops every rank after the same step.
func TestDataParallelStopsTogether(t *testing.T) {
	sets := []string{"seed=3", "training.steps=200", "privacy.target_epsilon=0.5", "output.dir=" + t.TempDir()}
	sum, params, errs := runRanks(t, 3, sets, nil)
	noErrors(t, errs)
	if sum.Steps >= 200 || sum.StoppedEarly == "" {
		t.Fatalf("ran %d steps (%q): want a stop before the target", sum.Steps, sum.StoppedEarly)
	}
	if !slices.Equal(params[0], params[1]) || !slices.Equal(params[0], params[2]) {
		t.Error("the ranks stopped at different steps")
	}
}

// A data-parallel run that crashes is resumed from rank 0's checkpoint on another number of
// ranks; every step ever run is counted, and the resumed ranks agree.
func TestDataParallelResumesOnOtherRanks(t *testing.T) {
	dir := t.TempDir()
	sets := []string{"seed=5", "training.steps=20", "training.checkpoint_every=5", "output.dir=" + dir}
	crash := HookFunc(func(s *StepInfo) error {
		if s.Step == 12 {
			return errCrash
		}
		return nil
	})
	_, _, errs := runRanks(t, 2, sets, func(r int) Options { return Options{Hooks: []Hook{crash}} })
	if !errors.Is(errs[0], errCrash) || errs[1] == nil {
		t.Fatalf("crash at step 12: rank errors %v", errs)
	}
	sum, params, errs := runRanks(t, 3, sets, func(int) Options { return Options{Resume: true} })
	noErrors(t, errs)
	if sum.Steps != 20 || sum.LedgerSteps != 22 {
		t.Errorf("resumed run: %d steps, %d in the ledger; want 20 and 22 (12 run before the crash, 10 after the checkpoint at 10)", sum.Steps, sum.LedgerSteps)
	}
	if !slices.Equal(params[0], params[2]) {
		t.Error("the resumed ranks disagree")
	}
}

// What data-parallel training cannot do is refused by name: an algorithm whose step reads
// more than the gradient sums, and ranks whose data differ.
func TestDataParallelRefusals(t *testing.T) {
	_, _, errs := runRanks(t, 2, []string{"optimizer.algorithm=dp-ulr", "output.dir=" + t.TempDir()}, nil)
	if errs[0] == nil || !strings.Contains(errs[0].Error(), "cannot run on 2 ranks") {
		t.Errorf("dp-ulr on 2 ranks: %v", errs[0])
	}
	_, _, errs = runRanks(t, 2, []string{"output.dir=" + t.TempDir()}, func(r int) Options {
		if r == 0 {
			return Options{}
		}
		return Options{TrainSplit: func(s *data.Split) (*data.Split, error) {
			c := s.Clone()
			c.X[0]++
			return c, nil
		}}
	})
	if errs[0] == nil || !strings.Contains(errs[0].Error(), "rank 1's training examples differ") {
		t.Errorf("ranks with different data: %v", errs[0])
	}
}
