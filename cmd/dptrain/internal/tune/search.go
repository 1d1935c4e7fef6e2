package tune

import (
	"context"
	crand "crypto/rand"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/sirupsen/logrus"
	"gopkg.in/yaml.v3"

	"github.com/dptrain/dptrain/cmd/dptrain/internal/sweep"
	"github.com/dptrain/dptrain/data"
	"github.com/dptrain/dptrain/models/graph"
	"github.com/dptrain/dptrain/optim"
	"github.com/dptrain/dptrain/train"
	"github.com/dptrain/dptrain/train/config"
	"github.com/dptrain/dptrain/train/rundir"
)

// Files and folders of a search directory. Only ReleaseDir and SummaryFile may be published;
// PrivateDir holds what the theorems require to stay secret: K, every candidate, their scores.
const (
	ReleaseDir  = "release"
	SummaryFile = "summary.json"
	PrivateDir  = "private"
	StateFile   = "search.json"
	SweepDir    = "sweep"
)

// NotPrivateSeeded is the summary's not_private reason for a seeded search.
const NotPrivateSeeded = "a seed was set: the number of candidates, their hyperparameters, every batch and every noise draw can be regenerated from it, so the release is NOT private whatever ε says (ε describes the mechanism, not this search); search without seed for a release"

// Request is one search.
type Request struct {
	// Config and Space are the paths of the base config and of the space file; Out the
	// search directory.
	Config, Space, Out string
	// RunCells runs the plan's unfinished, available cells (for dptrain: sweep.Local with a
	// pool of worker processes). Nil runs them one after the other in this process.
	RunCells func(ctx context.Context, p *sweep.Plan) error
	Log      *logrus.Logger
}

// State is the search's private record (DIR/private/search.json): written once when the search
// is drawn, then only completed; a search is never drawn again.
type State struct {
	ConfigSHA256 string  `json:"config_sha256"`
	SpaceSHA256  string  `json:"space_sha256"`
	Seed         *uint64 `json:"seed,omitempty"`
	// K is the number of candidates drawn: secret (the theorems cover the best candidate only).
	K           int     `json:"k"`
	Law         string  `json:"law"`
	Mean        float64 `json:"mean"`
	Examples    int     `json:"examples"`
	Validation  int     `json:"validation_examples"`
	Calibration `json:"calibration"`
	Candidates  []Candidate `json:"candidates"`
}

// Candidate is one drawn candidate and what became of it.
type Candidate struct {
	Set             []string `json:"set"`
	NoiseMultiplier float64  `json:"noise_multiplier"`
	Seed            *uint64  `json:"seed,omitempty"`
	ScoreSeed       *uint64  `json:"score_seed,omitempty"`
	// Score is the noisy count of correct validation predictions, drawn once.
	Score *float64 `json:"score,omitempty"`
	// Failed holds the error of a candidate that failed: it is counted (it may have run on
	// the data), never scored, never run again.
	Failed string `json:"failed,omitempty"`
}

// Summary is DIR/summary.json: what may be published about the search.
type Summary struct {
	Name string `json:"name"`
	// Epsilon is the whole search's certified ε (Papernot & Steinke), all candidates and
	// their scores included: the ε to report.
	Epsilon       float64 `json:"epsilon"`
	Delta         float64 `json:"delta"`
	Label         string  `json:"label"`
	Accountant    string  `json:"accountant"`
	Order         float64 `json:"order"`
	TargetEpsilon float64 `json:"target_epsilon"`
	// CandidateEpsilon is one candidate's certified ε (training and score, any setting).
	CandidateEpsilon float64 `json:"candidate_epsilon"`
	Candidates       string  `json:"candidates"`
	MeanCandidates   float64 `json:"mean_candidates"`
	Validation       struct {
		Fraction float64 `json:"fraction"`
		Examples int     `json:"examples"`
		Noise    float64 `json:"noise"`
	} `json:"validation"`
	Composition string `json:"composition"`
	// Released is the best candidate, or nil when none was released (K = 0, or every
	// candidate failed).
	Released *Released `json:"released"`
	// Unreleased says why nothing was released.
	Unreleased   string `json:"unreleased,omitempty"`
	Reproducible bool   `json:"reproducible"`
	NotPrivate   string `json:"not_private,omitempty"`
	Note         string `json:"note"`
}

// Released is the released candidate: its hyperparameters, noisy validation score and run.
type Released struct {
	Hyperparameters []string `json:"hyperparameters"`
	NoiseMultiplier float64  `json:"noise_multiplier"`
	// ValidationAccuracy is its noisy validation count over the validation examples (part of
	// the candidate's output the theorems cover).
	ValidationAccuracy float64 `json:"validation_accuracy_noisy"`
	TestAccuracy       float64 `json:"test_accuracy"`
	// Epsilon is its training run's own ε per mode, as its summary gives it: the run alone,
	// not the search.
	Epsilon []train.ModeEpsilon `json:"run_epsilon"`
	Dir     string              `json:"dir"`
}

const summaryNote = "epsilon is the certified ε of the whole search (every candidate's training and noisy validation score; Papernot & Steinke 2022): report it, not the released run's own run_epsilon. Nothing about the other candidates, not even how many ran, is released."

// Run runs the search of req to its end, or continues it: the first call draws K and the
// candidates, writes them as a sweep plan in DIR/private/sweep and state; a later call (after
// an interruption) continues the plan's cells. Once every candidate has finished or failed,
// each is scored once, the best is copied to DIR/release/ and DIR/summary.json written; a call
// on a finished search returns its summary.
//
// A search whose candidates were written as a Slurm job array (Submit, or dptrain sweep emit
// --slurm on DIR/private/sweep: the plan's slurm/array.sbatch exists) trains none of them here:
// Run scores and releases once every candidate has finished or failed on the cluster, and
// otherwise returns an error that says to wait for the array or to submit it again.
func Run(ctx context.Context, req Request) (*Summary, error) {
	_, sum, err := runSearch(ctx, req, nil)
	return sum, err
}

// Submit draws the search of req as Run does (or opens the one drawn in req.Out: K and the
// candidates are never drawn again), records the candidates that failed, and writes the Slurm
// job array of sweep.EmitSlurm, with o, for the candidates that have neither finished nor
// failed: it trains nothing, and returns the files written (submit.sh last). Run afterwards
// scores the candidates and releases the best. When no candidate is left to run, Submit writes
// no array and finishes the search as Run does: it returns no files and the summary.
func Submit(ctx context.Context, req Request, o sweep.SlurmOptions) ([]string, *Summary, error) {
	o.Unfinished = true
	return runSearch(ctx, req, &o)
}

// runSearch is Run (slurm nil) and Submit.
func runSearch(ctx context.Context, req Request, slurm *sweep.SlurmOptions) ([]string, *Summary, error) {
	if req.Log == nil {
		req.Log = logrus.New()
		req.Log.SetOutput(io.Discard)
	}
	base, err := os.ReadFile(req.Config)
	if err != nil {
		return nil, nil, fmt.Errorf("config: %w", err)
	}
	spaceBytes, err := os.ReadFile(req.Space)
	if err != nil {
		return nil, nil, fmt.Errorf("space: %w", err)
	}
	space, err := ParseSpace(spaceBytes)
	if err != nil {
		return nil, nil, fmt.Errorf("space %s: %w", req.Space, err)
	}
	cfg, err := checkBase(base, space)
	if err != nil {
		return nil, nil, fmt.Errorf("config %s: %w", req.Config, err)
	}
	if err := space.CheckAgainst(base); err != nil {
		return nil, nil, fmt.Errorf("space %s: %w", req.Space, err)
	}
	out, err := filepath.Abs(req.Out)
	if err != nil {
		return nil, nil, err
	}
	priv := filepath.Join(out, PrivateDir)
	if err := os.MkdirAll(priv, 0o755); err != nil {
		return nil, nil, err
	}
	release, err := rundir.LockDir(priv, "lock", "search "+req.Out)
	if err != nil {
		return nil, nil, err
	}
	defer release()
	if s, err := readJSON[Summary](filepath.Join(out, SummaryFile)); err == nil {
		return nil, s, nil
	}
	st, err := readJSON[State](filepath.Join(priv, StateFile))
	switch {
	case err == nil:
		if st.ConfigSHA256 != digest(base) || st.SpaceSHA256 != digest(spaceBytes) {
			return nil, nil, fmt.Errorf("%s holds a search drawn from another base config or space file: give the files it was drawn from, or a new --out (the privacy this search spent is not given back)", req.Out)
		}
	case errors.Is(err, os.ErrNotExist):
		if st, err = draw(ctx, req, base, spaceBytes, space, cfg); err != nil {
			return nil, nil, err
		}
	default:
		return nil, nil, err
	}
	p, err := sweep.LoadPlan(filepath.Join(priv, SweepDir))
	if err != nil {
		return nil, nil, err
	}
	onSlurm := slurm != nil || OnSlurm(p)
	if !onSlurm {
		if err := runCells(ctx, req, p); err != nil {
			return nil, nil, err
		}
	}
	left, err := settle(st, p, priv)
	if err != nil {
		return nil, nil, err
	}
	if len(left) > 0 {
		switch {
		case slurm != nil:
			files, err := sweep.EmitSlurm(p, *slurm)
			if err == nil {
				req.Log.Infof("tune: the candidates left to run are a Slurm job array in %s", filepath.Join(p.Dir(), sweep.SlurmDir))
			}
			return files, nil, err
		case onSlurm:
			slurmDir := filepath.Join(p.Dir(), sweep.SlurmDir)
			return nil, nil, fmt.Errorf("%d candidates have not finished (%s, in %s); they run as a Slurm job array (%s), and this command trains none of them here.\n"+
				"  Still running: wait for the array to end, then run this command again.\n"+
				"  Cancelled, preempted or out of time: run this command with --slurm, which writes the array again for them alone, then bash %s (they resume from their checkpoints; a failed candidate is counted and never run again).\n"+
				"  To train them on this machine instead: dptrain sweep run %s, then this command",
				len(left), strings.Join(left, " "), p.Dir(), filepath.Join(slurmDir, sweep.SlurmArray), filepath.Join(slurmDir, sweep.SlurmSubmit), p.Dir())
		default:
			return nil, nil, fmt.Errorf("%d candidates have not finished (%s, in %s): run the same dptrain tune command again to continue them", len(left), strings.Join(left, " "), p.Dir())
		}
	}
	if err := score(ctx, req, st, p, cfg, priv); err != nil {
		return nil, nil, err
	}
	sum, err := finish(st, space, p, out)
	return nil, sum, err
}

// OnSlurm reports whether the plan's cells were written as a Slurm job array (its
// slurm/array.sbatch exists): Run then trains none of them.
func OnSlurm(p *sweep.Plan) bool {
	_, err := os.Stat(filepath.Join(p.Dir(), sweep.SlurmDir, sweep.SlurmArray))
	return err == nil
}

// checkBase refuses a base config the search cannot account for.
func checkBase(base []byte, space *Space) (*config.Config, error) {
	cfg, err := config.ParseConfig(base, nil)
	if err != nil {
		return nil, err
	}
	switch {
	case cfg.Optimizer.Algorithm != "dp-sgd":
		return nil, fmt.Errorf("optimizer.algorithm is %s: the search accounts for dp-sgd candidates (Poisson-sampled Gaussian steps) only", cfg.Optimizer.Algorithm)
	case cfg.Optimizer.Sampling != "poisson":
		return nil, fmt.Errorf("optimizer.sampling is %s: the search accounts for poisson sampling only", cfg.Optimizer.Sampling)
	case cfg.Seed != nil:
		return nil, errors.New("seed is set: remove it from the base config; set seed in the space file for a reproducible (NOT private) search")
	}
	return cfg, nil
}

func digest(b []byte) string {
	h := sha256.Sum256(b)
	return hex.EncodeToString(h[:])
}

func readJSON[T any](path string) (*T, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	v := new(T)
	if err := json.Unmarshal(b, v); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return v, nil
}

func writeJSON(path string, v any) error {
	return data.WriteFileAtomic(path, func(w io.Writer) error {
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		return enc.Encode(v)
	})
}

// source is the search's randomness: crypto/rand, or the space's seed (NOT private).
func source(seed *uint64) (*rand.Rand, error) {
	var key [32]byte
	if seed != nil {
		binary.LittleEndian.PutUint64(key[:], *seed)
		copy(key[8:], "dptrain tune seeded search")
	} else if _, err := crand.Read(key[:]); err != nil {
		return nil, fmt.Errorf("tune: crypto/rand: %w", err)
	}
	return rand.New(rand.NewChaCha8(key)), nil
}

// draw calibrates the noise, draws K and the candidates, and writes the plan and the state.
func draw(ctx context.Context, req Request, base, spaceBytes []byte, space *Space, cfg *config.Config) (*State, error) {
	dist, err := space.Candidates.Distribution()
	if err != nil {
		return nil, err
	}
	_, trainSplit, _, err := train.LoadData(ctx, cfg, req.Log)
	if err != nil {
		return nil, err
	}
	n := trainSplit.Len()
	v := int(math.Round(space.Validation.Fraction * float64(n)))
	if v < 1 || n-v < 1 {
		return nil, fmt.Errorf("validation.fraction %v of %d training examples leaves %d to validate and %d to train: choose a fraction that leaves both", space.Validation.Fraction, n, v, n-v)
	}
	noise := space.Validation.Noise
	if noise == 0 {
		noise = DefaultScoreNoise(v)
	}
	sets, err := settings(base, space, n-v)
	if err != nil {
		return nil, err
	}
	req.Log.Infof("tune: calibrating σ for %d setting(s) of batch size and length, %d training and %d validation examples", len(sets), n-v, v)
	cal, err := Calibrate(ctx, sets, noise, dist, space.TargetEpsilon, space.Delta)
	if err != nil {
		return nil, err
	}
	mean, err := dist.Mean()
	if err != nil {
		return nil, err
	}
	r, err := source(space.Seed)
	if err != nil {
		return nil, err
	}
	k, err := dist.Sample(r)
	if err != nil {
		return nil, err
	}
	st := &State{ConfigSHA256: digest(base), SpaceSHA256: digest(spaceBytes), Seed: space.Seed, K: k,
		Law: dist.String(), Mean: mean, Examples: n, Validation: v, Calibration: cal}
	suite := &sweep.Suite{Name: "tune", Config: absPath(req.Config), Axes: []sweep.Axis{{Name: "candidate"}}}
	common := []string{"data.train_subset=" + strconv.Itoa(n-v), "privacy.target_epsilon=0",
		"privacy.delta=" + strconv.FormatFloat(space.Delta, 'g', -1, 64)}
	for i := range k {
		sets, err := space.Draw(r)
		if err != nil {
			return nil, err
		}
		c := Candidate{Set: sets}
		// σ = 1 stands in for the calibrated σ, which depends on the setting parsed here.
		ccfg, err := config.ParseConfig(base, append(append([]string(nil), common...), append([]string{"optimizer.noise_multiplier=1"}, sets...)...))
		if err != nil {
			return nil, fmt.Errorf("candidate %s: %w", strings.Join(sets, " "), err)
		}
		s, err := settingOf(ccfg, n-v)
		if err != nil {
			return nil, err
		}
		for _, o := range cal.Settings {
			if o.SampleRate == s.SampleRate && o.Steps == s.Steps {
				c.NoiseMultiplier = o.NoiseMultiplier
			}
		}
		if c.NoiseMultiplier == 0 {
			return nil, fmt.Errorf("tune: candidate %s has a setting (batch %d, %d steps) the calibration did not cover: report this with the space file", strings.Join(sets, " "), s.BatchSize, s.Steps)
		}
		all := append(append([]string(nil), common...), "optimizer.noise_multiplier="+strconv.FormatFloat(c.NoiseMultiplier, 'g', -1, 64))
		if space.Seed != nil {
			cs, ss := r.Uint64(), r.Uint64()
			c.Seed, c.ScoreSeed = &cs, &ss
			all = append(all, "seed="+strconv.FormatUint(cs, 10))
		}
		all = append(all, sets...)
		suite.Axes[0].Values = append(suite.Axes[0].Values, sweep.Value{Label: fmt.Sprintf("c%03d", i), Set: all})
		st.Candidates = append(st.Candidates, c)
	}
	priv := filepath.Join(absPath(req.Out), PrivateDir)
	if _, err := sweep.MakePlan(suite, filepath.Join(priv, SweepDir), nil); err != nil {
		return nil, err
	}
	if err := writeJSON(filepath.Join(priv, StateFile), st); err != nil {
		return nil, err
	}
	req.Log.Infof("tune: search drawn (%s, σ from %s); the candidates are in %s", dist, sigmaRange(cal.Settings), filepath.Join(priv, SweepDir))
	return st, nil
}

func absPath(p string) string {
	if a, err := filepath.Abs(p); err == nil {
		return a
	}
	return p
}

func sigmaRange(sets []Setting) string {
	lo, hi := math.Inf(1), math.Inf(-1)
	for _, s := range sets {
		lo, hi = math.Min(lo, s.NoiseMultiplier), math.Max(hi, s.NoiseMultiplier)
	}
	if lo == hi {
		return fmt.Sprintf("%.4g", lo)
	}
	return fmt.Sprintf("%.4g to %.4g", lo, hi)
}

// runCells runs the plan's unfinished cells.
func runCells(ctx context.Context, req Request, p *sweep.Plan) error {
	if req.RunCells != nil {
		return req.RunCells(ctx, p)
	}
	for i, c := range p.Cells {
		if c.Unavailable != "" || p.Done(i) {
			continue
		}
		if _, err := sweep.RunCell(ctx, p, i, train.Options{Log: req.Log}); err != nil && ctx.Err() != nil {
			return err
		}
	}
	return ctx.Err()
}

// settle records the candidates that failed (their cell's error.txt): they count, but are never
// run again (the plan marks them unavailable) nor scored. It returns the cells of the
// candidates that have neither finished nor failed.
func settle(st *State, p *sweep.Plan, priv string) ([]string, error) {
	var left []string
	changed := false
	for i := range st.Candidates {
		c := &st.Candidates[i]
		if p.Done(i) || c.Failed != "" {
			continue
		}
		b, err := os.ReadFile(filepath.Join(p.CellDir(i), sweep.ErrorFile))
		if err != nil {
			left = append(left, p.Cells[i].ID)
			continue
		}
		c.Failed = strings.TrimSpace(string(b))
		p.Cells[i].Unavailable = "failed in a private search: counted, never run again"
		changed = true
	}
	if changed {
		if err := p.Save(); err != nil {
			return nil, err
		}
		if err := writeJSON(filepath.Join(priv, StateFile), st); err != nil {
			return nil, err
		}
	}
	return left, nil
}

// score draws each finished candidate's noisy validation count, once: the count of correct
// predictions of its model on the v held-out examples plus N(0, σ_s²) (sensitivity 1 under
// adding or removing one example), kept in the state so that a continued search reuses it.
func score(ctx context.Context, req Request, st *State, p *sweep.Plan, cfg *config.Config, priv string) error {
	var val *data.Split
	for i := range st.Candidates {
		c := &st.Candidates[i]
		if c.Failed != "" || c.Score != nil {
			continue
		}
		if val == nil {
			_, tr, _, err := train.LoadData(ctx, cfg, req.Log)
			if err != nil {
				return err
			}
			if tr.Len() != st.Examples {
				return fmt.Errorf("the training split now has %d examples, the search was drawn with %d: restore the data it was drawn on", tr.Len(), st.Examples)
			}
			lo := st.Examples - st.Validation
			val = &data.Split{X: tr.X[lo*tr.D : st.Examples*tr.D], Y: tr.Y[lo:st.Examples], N: st.Validation, D: tr.D}
		}
		nw, err := graph.Load(filepath.Join(p.RunDir(i), rundir.ModelFile))
		if err != nil {
			return err
		}
		s, err := nw.Evaluate(data.Batch{X: val.X, Y: val.Y, N: val.N})
		if err != nil {
			return fmt.Errorf("scoring %s: %w", p.Cells[i].ID, err)
		}
		noise, err := scoreNoise(c.ScoreSeed)
		if err != nil {
			return err
		}
		v := []float32{float32(s.Correct)}
		noise.AddGaussian(v, st.ScoreNoise)
		sc := float64(v[0])
		c.Score = &sc
		if err := writeJSON(filepath.Join(priv, StateFile), st); err != nil {
			return err
		}
	}
	return nil
}

func scoreNoise(seed *uint64) (*optim.Noise, error) {
	if seed != nil {
		return optim.NewSeededNoise(*seed), nil
	}
	return optim.NewNoise()
}

// finish checks the search's ε with the runs as they ran, releases the best candidate and
// writes the summary.
func finish(st *State, space *Space, p *sweep.Plan, out string) (*Summary, error) {
	dist, err := space.Candidates.Distribution()
	if err != nil {
		return nil, err
	}
	// The runs as they ran: a run resumed after a crash may have executed more steps than
	// planned (its ledger counts them all), and privacy spent is never given back.
	sets := append([]Setting(nil), st.Settings...)
	for i := range st.Candidates {
		if !p.Done(i) {
			continue
		}
		rs, err := readJSON[train.Summary](filepath.Join(p.RunDir(i), rundir.SummaryFile))
		if err != nil {
			return nil, err
		}
		sets = append(sets, Setting{BatchSize: rs.BatchSize, SampleRate: rs.SampleRate, Steps: max(rs.Steps, rs.LedgerSteps), NoiseMultiplier: rs.NoiseMultiplier})
	}
	cand, search, err := Guarantees(sets, st.ScoreNoise, dist, space.Delta)
	if err != nil {
		return nil, err
	}
	sum := &Summary{Name: "tune", Epsilon: search.Epsilon, Delta: search.Delta, Label: string(search.Label), Accountant: search.Accountant,
		Order: search.Order, TargetEpsilon: space.TargetEpsilon, CandidateEpsilon: cand.Epsilon, Candidates: st.Law, MeanCandidates: st.Mean,
		Composition:  "a candidate's RDP is its training curve (the largest over the settings the space allows) plus its score's, λ/(2σ_s²)",
		Reproducible: st.Seed != nil, Note: summaryNote}
	sum.Validation.Fraction, sum.Validation.Examples, sum.Validation.Noise = space.Validation.Fraction, st.Validation, st.ScoreNoise
	if st.Seed != nil {
		sum.NotPrivate = NotPrivateSeeded
	}
	best := -1
	for i, c := range st.Candidates {
		if c.Score != nil && (best < 0 || *c.Score > *st.Candidates[best].Score) {
			best = i
		}
	}
	if best < 0 {
		sum.Unreleased = "no candidate to release: the law of K allows none, or every candidate failed (an outcome the guarantee covers)"
	} else if sum.Released, err = releaseBest(st, p, best, out); err != nil {
		return nil, err
	}
	if err := writeJSON(filepath.Join(out, SummaryFile), sum); err != nil {
		return nil, err
	}
	if search.Epsilon > space.TargetEpsilon {
		return sum, fmt.Errorf("the search's certified ε = %.4g is above the target %g: runs executed more steps than planned (a resume after a crash); the summary reports the ε spent", search.Epsilon, space.TargetEpsilon)
	}
	return sum, nil
}

// releaseBest copies candidate i's model, config and run summary to DIR/release/, with nothing
// in them that says which candidate it was or how many ran.
func releaseBest(st *State, p *sweep.Plan, i int, out string) (*Released, error) {
	dir := filepath.Join(out, ReleaseDir)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	run := p.RunDir(i)
	b, err := os.ReadFile(filepath.Join(run, rundir.ModelFile))
	if err != nil {
		return nil, err
	}
	if err := data.WriteFileAtomic(filepath.Join(dir, rundir.ModelFile), func(w io.Writer) error { _, err := w.Write(b); return err }); err != nil {
		return nil, err
	}
	cfg, err := config.LoadConfig(filepath.Join(run, rundir.ConfigFile), nil)
	if err != nil {
		return nil, err
	}
	cfg.Name, cfg.Output.Dir = "tune/released", dir
	if err := data.WriteFileAtomic(filepath.Join(dir, rundir.ConfigFile), func(w io.Writer) error { return yaml.NewEncoder(w).Encode(cfg) }); err != nil {
		return nil, err
	}
	rs, err := readJSON[train.Summary](filepath.Join(run, rundir.SummaryFile))
	if err != nil {
		return nil, err
	}
	rs.Name, rs.OutputDir = cfg.Name, dir
	rs.ModelFile, rs.ConfigFile = filepath.Join(dir, rundir.ModelFile), filepath.Join(dir, rundir.ConfigFile)
	if err := writeJSON(filepath.Join(dir, rundir.SummaryFile), rs); err != nil {
		return nil, err
	}
	c := st.Candidates[i]
	return &Released{Hyperparameters: c.Set, NoiseMultiplier: c.NoiseMultiplier, ValidationAccuracy: *c.Score / float64(st.Validation),
		TestAccuracy: rs.TestAccuracy, Epsilon: rs.Epsilon, Dir: dir}, nil
}
