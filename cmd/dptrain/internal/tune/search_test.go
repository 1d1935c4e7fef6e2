package tune

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/dptrain/dptrain/cmd/dptrain/internal/sweep"
	"github.com/dptrain/dptrain/train"
	"github.com/dptrain/dptrain/train/rundir"
)

func search(t *testing.T, out string, run func(context.Context, *sweep.Plan) error) (*Summary, *State, error) {
	t.Helper()
	sum, err := Run(context.Background(), Request{Config: "testdata/base.yaml", Space: "testdata/space.yaml", Out: out, RunCells: run})
	st, serr := readJSON[State](filepath.Join(out, PrivateDir, StateFile))
	if serr != nil {
		t.Fatalf("%v (search: %v)", serr, err)
	}
	return sum, st, err
}

// A small seeded search on synthetic data runs end to end: every candidate trains and is
// scored, the best is released with the search's certified ε within the target and labelled
// not private; the same seed gives the same search; a finished search is not run again.
func TestSearchSeededEndToEnd(t *testing.T) {
	out := t.TempDir()
	sum, st, err := search(t, out, nil)
	if err != nil {
		t.Fatal(err)
	}
	if sum.Released == nil || !(sum.Epsilon <= sum.TargetEpsilon) || sum.Label != "certified" || sum.Accountant != "tuning" {
		t.Fatalf("summary %+v", sum)
	}
	if !sum.Reproducible || sum.NotPrivate != NotPrivateSeeded {
		t.Errorf("a seeded search is not labelled: reproducible %v, not_private %q", sum.Reproducible, sum.NotPrivate)
	}
	if !(sum.CandidateEpsilon < sum.Epsilon) || sum.Validation.Examples != 480 || sum.Validation.Noise != 10 {
		t.Errorf("summary %+v", sum)
	}
	best := -1
	for i, c := range st.Candidates {
		if c.Score == nil || c.Failed != "" {
			t.Fatalf("candidate %d: %+v", i, c)
		}
		if best < 0 || *c.Score > *st.Candidates[best].Score {
			best = i
		}
	}
	if st.K != len(st.Candidates) || st.K < 2 || !reflect.DeepEqual(sum.Released.Hyperparameters, st.Candidates[best].Set) {
		t.Fatalf("K = %d, %d candidates, released %v, best %d", st.K, len(st.Candidates), sum.Released.Hyperparameters, best)
	}
	// The released run is the best candidate's, and nothing public says which one or how many.
	for _, f := range []string{rundir.ModelFile, rundir.ConfigFile, rundir.SummaryFile} {
		if _, err := os.Stat(filepath.Join(out, ReleaseDir, f)); err != nil {
			t.Error(err)
		}
	}
	for _, f := range []string{SummaryFile, filepath.Join(ReleaseDir, rundir.SummaryFile), filepath.Join(ReleaseDir, rundir.ConfigFile)} {
		b, _ := os.ReadFile(filepath.Join(out, f))
		if strings.Contains(string(b), "c00") || strings.Contains(string(b), `"k"`) || strings.Contains(string(b), filepath.Join(out, PrivateDir)) {
			t.Errorf("%s names a candidate, K or the private directory:\n%s", f, b)
		}
	}
	rel, err := readJSON[train.Summary](filepath.Join(out, ReleaseDir, rundir.SummaryFile))
	if err != nil {
		t.Fatal(err)
	}
	if rel.TestAccuracy != sum.Released.TestAccuracy || rel.NoiseMultiplier != st.Candidates[best].NoiseMultiplier || rel.DatasetSize != 4320 {
		t.Errorf("released run %+v", rel)
	}
	// The same seed draws the same search.
	other := t.TempDir()
	sum2, st2, err := search(t, other, nil)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(st.Candidates, st2.Candidates) || sum2.Epsilon != sum.Epsilon || sum2.Released.TestAccuracy != sum.Released.TestAccuracy {
		t.Errorf("one seed, two searches:\n%+v\n%+v", st.Candidates, st2.Candidates)
	}
	// A finished search returns its summary without running anything.
	again, _, err := search(t, out, func(context.Context, *sweep.Plan) error { return errors.New("ran again") })
	if err != nil || again.Epsilon != sum.Epsilon {
		t.Errorf("finished search run again: %v", err)
	}
}

// An interrupted search continues where it stopped, with the same K and candidates; a
// candidate that failed is counted, never run again nor released.
func TestSearchContinuesAndCountsFailures(t *testing.T) {
	out := t.TempDir()
	// First call: candidate 0 trains, candidate 1 fails, the rest are interrupted.
	_, st, err := search(t, out, func(ctx context.Context, p *sweep.Plan) error {
		if _, err := sweep.RunCell(ctx, p, 0, train.Options{}); err != nil {
			return err
		}
		return os.WriteFile(filepath.Join(p.CellDir(1), sweep.ErrorFile), []byte("simulated failure\n"), 0o644)
	})
	if err == nil || !strings.Contains(err.Error(), "run the same dptrain tune command again") {
		t.Fatalf("a search with unfinished candidates: %v", err)
	}
	if st.K < 3 || st.Candidates[1].Failed != "simulated failure" {
		t.Fatalf("K = %d, candidate 1 %+v", st.K, st.Candidates[1])
	}
	p, err := sweep.LoadPlan(filepath.Join(out, PrivateDir, SweepDir))
	if err != nil {
		t.Fatal(err)
	}
	first, err := os.Stat(filepath.Join(p.RunDir(0), rundir.SummaryFile))
	if err != nil {
		t.Fatal(err)
	}
	if p.Cells[1].Unavailable == "" {
		t.Error("the failed candidate is not marked never to run again")
	}
	sum, st2, err := search(t, out, nil)
	if err != nil {
		t.Fatal(err)
	}
	if st2.K != st.K || !reflect.DeepEqual(st2.Candidates[0].Set, st.Candidates[0].Set) {
		t.Errorf("the search was drawn again: K %d → %d", st.K, st2.K)
	}
	if now, _ := os.Stat(filepath.Join(p.RunDir(0), rundir.SummaryFile)); !now.ModTime().Equal(first.ModTime()) {
		t.Error("the finished candidate ran again")
	}
	if p.Done(1) || st2.Candidates[1].Score != nil || sum.Released == nil {
		t.Errorf("the failed candidate ran or was scored: %+v", st2.Candidates[1])
	}
	for i, c := range st2.Candidates {
		if i != 1 && c.Score == nil {
			t.Errorf("candidate %d not scored", i)
		}
	}
}

// Base configs and directories the search cannot account for are refused before anything runs.
func TestSearchRefuses(t *testing.T) {
	base, _ := os.ReadFile("testdata/base.yaml")
	dir := t.TempDir()
	for _, tc := range []struct{ name, config, want string }{
		{"seeded base", "seed: 3\n" + string(base), "set seed in the space file"},
		{"shuffled", strings.Replace(string(base), "clip_norm: 1", "clip_norm: 1, sampling: shuffled", 1), "poisson sampling only"},
	} {
		path := filepath.Join(dir, tc.name+".yaml")
		os.WriteFile(path, []byte(tc.config), 0o644)
		_, err := Run(context.Background(), Request{Config: path, Space: "testdata/space.yaml", Out: filepath.Join(dir, tc.name)})
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want %q", tc.name, err, tc.want)
		}
	}
	// A directory drawn from other files is never drawn again.
	out := filepath.Join(dir, "drawn")
	os.MkdirAll(filepath.Join(out, PrivateDir), 0o755)
	b, _ := json.Marshal(State{ConfigSHA256: "other"})
	os.WriteFile(filepath.Join(out, PrivateDir, StateFile), b, 0o644)
	_, err := Run(context.Background(), Request{Config: "testdata/base.yaml", Space: "testdata/space.yaml", Out: out})
	if err == nil || !strings.Contains(err.Error(), "another base config or space file") {
		t.Errorf("a directory of another search: %v", err)
	}
}

// A Poisson search that draws K = 0 runs nothing and releases nothing, with the same ε.
func TestSearchReleasesNothingForNoCandidate(t *testing.T) {
	dir := t.TempDir()
	space, _ := os.ReadFile("testdata/space.yaml")
	path := filepath.Join(dir, "space.yaml")
	os.WriteFile(path, []byte(strings.Replace(string(space), "mean: 2.5", "mean: 0.05", 1)), 0o644)
	sum, err := Run(context.Background(), Request{Config: "testdata/base.yaml", Space: path, Out: filepath.Join(dir, "out")})
	if err != nil {
		t.Fatal(err)
	}
	st, err := readJSON[State](filepath.Join(dir, "out", PrivateDir, StateFile))
	if err != nil {
		t.Fatal(err)
	}
	if st.K != 0 {
		t.Fatalf("K = %d: pick a seed that draws none", st.K)
	}
	if sum.Released != nil || sum.Unreleased == "" || !(sum.Epsilon > 0 && sum.Epsilon <= 4) {
		t.Errorf("summary %+v", sum)
	}
	if _, err := os.Stat(filepath.Join(dir, "out", ReleaseDir)); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("a release directory for no candidate: %v", err)
	}
}
