package train

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"gopkg.in/yaml.v3"

	"github.com/dptrain/dptrain/accounting"
	"github.com/dptrain/dptrain/algorithm"
	"github.com/dptrain/dptrain/data"
	"github.com/dptrain/dptrain/internal/dptest"
	"github.com/dptrain/dptrain/internal/mpi"
	"github.com/dptrain/dptrain/models"
	"github.com/dptrain/dptrain/models/graph"
	"github.com/dptrain/dptrain/optim"
	"github.com/dptrain/dptrain/train/config"
	"github.com/dptrain/dptrain/train/internal/augment"
)

// harnessModels are the architectures the neighbouring-dataset harness offers every
// algorithm, on 1×6×6 inputs with 3 classes; each algorithm's Prepare refuses those it does
// not accept. Each runs on every engine that builds it.
func harnessModels() map[string]models.Spec {
	img, flat := []int{1, 6, 6}, []int{36}
	cnn := func(l ...models.LayerSpec) models.Spec {
		return models.Spec{Kind: "cnn", Input: img, Classes: 3, Layers: l}
	}
	return map[string]models.Spec{
		"logreg":       {Kind: "logreg", Input: flat, Classes: 3},
		"mlp-tanh":     {Kind: "mlp", Input: flat, Classes: 3, Hidden: []int{8}, Activation: "tanh"},
		"mlp-gelu":     {Kind: "mlp", Input: flat, Classes: 3, Hidden: []int{8}, Activation: "gelu"},
		"mlp-relu-nob": {Kind: "mlp", Input: flat, Classes: 3, Hidden: []int{8, 6}, Activation: "relu", NoBias: true},
		"cnn-max": cnn(models.LayerSpec{Type: "conv2d", Out: 4, Kernel: 3, Padding: 1}, models.LayerSpec{Type: "tanh"},
			models.LayerSpec{Type: "maxpool", Kernel: 2, Stride: 1}, models.LayerSpec{Type: "flatten"}, models.LayerSpec{Type: "dense", Out: 3}),
		"cnn-avg": cnn(models.LayerSpec{Type: "conv2d", Out: 4, Kernel: 3, Stride: 1}, models.LayerSpec{Type: "relu"},
			models.LayerSpec{Type: "avgpool", Kernel: 2}, models.LayerSpec{Type: "flatten"}, models.LayerSpec{Type: "dense", Out: 3}),
		// A conv layer on the Gram path of the per-example norm (16 positions, patch width 72,
		// 16 channels) without padding, so that a constant input gives identical patches.
		"cnn-gram": {Kind: "cnn", Input: []int{8, 6, 6}, Classes: 3, Layers: []models.LayerSpec{{Type: "conv2d", Out: 16, Kernel: 3},
			{Type: "tanh"}, {Type: "flatten"}, {Type: "dense", Out: 3}}},
		"cnn-max-ws": {Kind: "cnn", Input: img, Classes: 3, WeightStandardization: true, Layers: []models.LayerSpec{{Type: "conv2d", Out: 4, Kernel: 3, Padding: 1},
			{Type: "tanh"}, {Type: "maxpool", Kernel: 2, Stride: 1}, {Type: "flatten"}, {Type: "dense", Out: 3}}},
		"cnn-groupnorm": cnn(models.LayerSpec{Type: "conv2d", Out: 4, Kernel: 3, Padding: 1}, models.LayerSpec{Type: "groupnorm", Groups: 2},
			models.LayerSpec{Type: "relu"}, models.LayerSpec{Type: "flatten"}, models.LayerSpec{Type: "dense", Out: 3}),
		"cnn-residual": cnn(models.LayerSpec{Type: "conv2d", Out: 4, Kernel: 3, Padding: 1, NoBias: true}, models.LayerSpec{Type: "groupnorm", Groups: 2},
			models.LayerSpec{Type: "relu"}, models.LayerSpec{Type: "resblock", Out: 4, Groups: 2},
			models.LayerSpec{Type: "resblock", Out: 6, Stride: 2, Groups: 3}, models.LayerSpec{Type: "globalavgpool"},
			models.LayerSpec{Type: "dense", Out: 3}),
	}
}

// harnessEngines are the engines (and data-parallel, augmentation and view variants of the
// direct executor) the harness drives, with engine dnnl in a binary built with the dnnl tag.
var harnessEngines = func() []string {
	e := []string{"direct", "graph", "direct/ranks=2", "direct/ranks=3", "direct/augment=3", "direct/views=3"}
	if models.DNNL() != "" {
		e = append(e, "dnnl")
	}
	return e
}()

// hasConv reports whether spec has a conv layer or a residual block.
func hasConv(spec models.Spec) bool {
	for _, l := range spec.Layers {
		if l.Type == "conv2d" || l.Type == "resblock" {
			return true
		}
	}
	return false
}

// adversarialParams are parameters under which per-position gradients cancel (Gram norms in
// float32 then lose every digit): conv weights and all biases 0 (every position of a constant
// input sees the same activation), dense weights to the first output alternating in sign over
// their inputs with a small random residue, GroupNorm scales 1.
func adversarialParams(nw *models.Network, rng *rand.Rand) []float32 {
	p := make([]float32, len(nw.Params()))
	for _, l := range nw.Layout() {
		v := p[l.Offset : l.Offset+l.Size]
		switch {
		case l.Bias, strings.Contains(l.Name, "conv"):
			// zero
		case strings.Contains(l.Name, "scale") || strings.Contains(l.Name, "gamma"):
			for j := range v {
				v[j] = 1
			}
		default:
			// To the first output only: the softmax errors of all outputs sum to 0, so the
			// same pattern on every output would cancel the gradient itself.
			out := l.Shape[len(l.Shape)-1]
			for j := 0; j < len(v); j += out {
				s := 1 + 1e-5*(2*rng.Float64()-1)
				if (j/out)%2 == 1 {
					s = -s
				}
				v[j] = float32(s)
			}
		}
	}
	return p
}

// harnessConfigs returns one config per distinct private algorithm setting shipped in
// configs/ (algorithm, sampling and its own section), with the update rule set to plain SGD:
// what follows the noise is post-processing and the harness reads the release through it.
func harnessConfigs(t *testing.T, algs *config.Algorithms) map[string][]*config.Config {
	paths, err := filepath.Glob("../configs/*.yaml")
	if err != nil || len(paths) == 0 {
		t.Fatalf("no shipped configs found: %v", err)
	}
	seen := map[string]bool{}
	out := map[string][]*config.Config{}
	for _, p := range paths {
		cfg, err := algs.LoadConfig(p, []string{"optimizer.update=sgd", "optimizer.weight_decay=0", "optimizer.schedule.kind=constant"})
		if err != nil {
			t.Fatalf("%s: %v", p, err)
		}
		a, err := algs.Lookup(cfg.Optimizer.Algorithm)
		if err != nil || !a.Private {
			continue
		}
		sec, _ := yaml.Marshal(cfg.Optimizer.Sections[a.Section])
		key := a.Name + "|" + cfg.Optimizer.Sampling + "|" + string(sec)
		if seen[key] {
			continue
		}
		seen[key] = true
		cfg.Name = strings.TrimSuffix(filepath.Base(p), ".yaml")
		out[a.Name] = append(out[a.Name], cfg)
	}
	return out
}

// harnessStep is one algorithm on one model and engine with one batch size: everything needed
// to build identical optimizers for both sides of a neighbouring pair.
type harnessStep struct {
	alg       algorithm.Algorithm
	plan      algorithm.Plan
	info      data.BatchInfo
	spec      models.Spec
	addRemove bool // the records declare add/remove adjacency
	// ranks > 1 runs the step data-parallel, as that many ranks would (ranksOracle).
	ranks int
	// augment > 1 averages that many augmented copies of each example before clipping
	// (data.augment, with crops and flips), or, with views > 0, that many of the example's
	// views (data.augment on features: each row holds views precomputed views).
	augment, views int
}

const (
	harnessN     = 1000 // the public dataset size
	harnessSteps = 10
	harnessSigma = 1e-6 // noise off, through the private code path
)

// prepareHarness prepares cfg's algorithm on spec for batches of size n; refused reports an
// algorithm that does not accept the model (its error says why).
func prepareHarness(algs *config.Algorithms, cfg *config.Config, spec models.Spec, n int) (h harnessStep, refused error, err error) {
	c := *cfg
	c.Optimizer.BatchSize = min(n, harnessN)
	if c.Optimizer.Sampling == "poisson" || c.Optimizer.Sampling == "" {
		c.Optimizer.BatchSize = 32
	}
	c.Optimizer.MinBatchSize = 1
	a, err := algs.Lookup(c.Optimizer.Algorithm)
	if err != nil {
		return h, nil, err
	}
	section, errs := algs.Sections(c.Optimizer)
	if len(errs) > 0 {
		return h, nil, errs[0]
	}
	nw, err := graph.New(spec, rand.New(rand.NewPCG(1, 2)))
	if err != nil {
		return h, err, nil // the engine does not run this network
	}
	scheme := data.Scheme(c.Optimizer.Sampling)
	if scheme == "" {
		scheme = data.SchemePoisson
	}
	s, err := data.NewSampler(scheme, harnessN, c.Optimizer.BatchSize, 1, rand.New(rand.NewPCG(3, 4)))
	if err != nil {
		return h, nil, err
	}
	// A large step size makes the update dominate the parameters' own rounding; algorithms
	// whose analysis bounds the step size keep the config's.
	for _, lr := range []float64{1e3 * float64(c.Optimizer.BatchSize), c.Optimizer.LearningRate} {
		c.Optimizer.LearningRate = lr
		sched, err := schedule(c.Optimizer, harnessSteps)
		if err != nil {
			return h, nil, err
		}
		h.plan, refused = a.Prepare(algorithm.Env{Config: c.AlgorithmConfig(), Section: section, Model: modelFacts(nw), Classes: 3, DatasetSize: harnessN,
			PlannedSteps: harnessSteps, Schedule: sched})
		if refused == nil {
			break
		}
	}
	if refused != nil {
		return h, refused, nil
	}
	h.alg, h.spec = a, spec
	h.info = data.PlannedBatch(s, 0)
	o, err := h.plan.NewOptimizer(1, optim.NewSeededNoise(1))
	if err != nil {
		return h, nil, err
	}
	recs, err := o.(optim.Declarer).Declare(h.info)
	if err != nil {
		return h, nil, err
	}
	h.addRemove = recs[0].Neighbouring == accounting.AddRemove
	return h, nil, nil
}

// experiment returns the harness experiment of h with the given parameters.
func (h harnessStep) experiment(params []float32) dptest.Experiment {
	return dptest.Experiment{
		Params: params,
		Info:   h.info,
		New: func() (optim.Optimizer, optim.GradientOracle, error) {
			nw, err := graph.New(h.spec, rand.New(rand.NewPCG(1, 2)))
			if err != nil {
				return nil, nil, err
			}
			o, err := h.plan.NewOptimizer(harnessSigma, optim.NewSeededNoise(7))
			if err != nil {
				return nil, nil, err
			}
			if in, ok := o.(optim.Initializer); ok {
				in.Init(nw.Params())
			}
			if h.ranks > 1 {
				ro, err := newRanksOracle(h.spec, nw, h.ranks)
				return o, ro, err
			}
			if h.augment > 1 {
				// The same key and round on D and D′: each example's copies depend on it alone.
				in := h.spec.Input
				c := augment.Config{Multiplicity: h.augment, CropPadding: 1, Flip: true, Shape: [3]int{in[0], in[1], in[2]}}
				if h.views > 0 {
					c = augment.Config{Multiplicity: h.augment, Views: h.views, Shape: c.Shape}
				}
				ao, err := augment.New(nw, c, [32]byte{7}, func() uint64 { return 0 })
				return o, ao, err
			}
			return o, nw, nil
		},
	}
}

// ranksOracle is the gradient oracle of a data-parallel step as k ranks run it: the optimizer
// under test calls rank 0's mpi.Sharded oracle, and at each call the other ranks' Sharded
// oracles (each over its own copy of the network, holding rank 0's parameters) are called with
// the same batch on their own goroutines, as their optimizers would call them, so that the real
// per-rank shares and the real all-reduce produce the sum the optimizer releases.
type ranksOracle struct {
	ranks []*mpi.Sharded
}

func newRanksOracle(spec models.Spec, nw *models.Network, k int) (*ranksOracle, error) {
	cs := mpi.Local(k)
	o := &ranksOracle{ranks: []*mpi.Sharded{{Inner: nw, Comm: cs[0]}}}
	for r := 1; r < k; r++ {
		other, err := graph.New(spec, rand.New(rand.NewPCG(1, 2)))
		if err != nil {
			return nil, err
		}
		o.ranks = append(o.ranks, &mpi.Sharded{Inner: other, Comm: cs[r]})
	}
	return o, nil
}

func (o *ranksOracle) Params() []float32 { return o.ranks[0].Params() }

// each runs call on rank 0 and, concurrently, on every other rank (with rank 0's parameters
// and buffers of its own), and returns rank 0's result.
func (o *ranksOracle) each(grad []float32, norms []float64, call func(r *mpi.Sharded, grad []float32, norms []float64) (data.Stats, error)) (data.Stats, error) {
	var wg sync.WaitGroup
	errs := make([]error, len(o.ranks))
	for i, r := range o.ranks[1:] {
		copy(r.Params(), o.ranks[0].Params())
		g := make([]float32, len(grad))
		var ns []float64
		if norms != nil {
			ns = make([]float64, len(norms))
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, errs[i+1] = call(r, g, ns)
		}()
	}
	st, err := call(o.ranks[0], grad, norms)
	wg.Wait()
	return st, errors.Join(append(errs, err)...)
}

func (o *ranksOracle) ClippedGradSum(b data.Batch, clip float64, grad []float32, norms []float64) (data.Stats, error) {
	return o.each(grad, norms, func(r *mpi.Sharded, g []float32, ns []float64) (data.Stats, error) {
		return r.ClippedGradSum(b, clip, g, ns)
	})
}

func (o *ranksOracle) PerSampleGradSum(b data.Batch, f func(int, []float32), grad []float32) (data.Stats, error) {
	return o.each(grad, nil, func(r *mpi.Sharded, g []float32, _ []float64) (data.Stats, error) {
		return r.PerSampleGradSum(b, f, g)
	})
}

// worst collects the largest ratio ‖ΔS‖/C per algorithm and relation, for the log.
type worst struct {
	mu sync.Mutex
	m  map[string]float64
}

func (w *worst) note(key string, r float64) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if r > w.m[key] {
		w.m[key] = r
	}
}

// TestNeighbouringSensitivity drives every registered private algorithm's real step, as
// configured by each shipped config that uses it, on D and on D minus (or with a replaced)
// one example, over every model and engine the algorithm accepts, crafted examples at every
// position of batches crossing the direct executor's block (32) and chunk boundaries, random
// and adversarial parameters and input scales 1 and 10⁴, and checks that every released
// record moved by at most its declared sensitivity. An algorithm registered later is covered
// by shipping a config for it.
func TestNeighbouringSensitivity(t *testing.T) {
	algs := config.Builtin()
	cfgs := harnessConfigs(t, algs)
	specs := harnessModels()
	names := make([]string, 0, len(specs))
	for n := range specs {
		names = append(names, n)
	}
	slices.Sort(names)
	w := &worst{m: map[string]float64{}}
	sizes := []int{1, 31, 32, 33, 257}
	if testing.Short() {
		sizes = []int{1, 33}
	}
	for _, alg := range algs.Names() {
		a, _ := algs.Lookup(alg)
		if !a.Private {
			continue
		}
		if len(cfgs[alg]) == 0 {
			t.Errorf("no config in configs/ uses the private algorithm %s: ship one, so that the neighbouring-dataset harness covers it", alg)
			continue
		}
		for _, cfg := range cfgs[alg] {
			accepted := 0
			for _, mname := range names {
				for _, engine := range harnessEngines {
					spec := specs[mname]
					if engine == "dnnl" && !hasConv(spec) {
						continue // engine dnnl is engine direct without conv layers
					}
					spec.Engine, _, _ = strings.Cut(engine, "/")
					ranks, augment := 1, 1
					if _, r, ok := strings.Cut(engine, "ranks="); ok {
						if !a.DataParallel {
							continue
						}
						ranks = int(r[0] - '0')
					}
					if _, k, ok := strings.Cut(engine, "augment="); ok {
						if !a.DataParallel || len(spec.Input) != 3 {
							continue // augmentation needs a gradient-sum step and images
						}
						augment = int(k[0] - '0')
					}
					views := 0
					if _, v, ok := strings.Cut(engine, "views="); ok {
						if !a.DataParallel || len(spec.Input) != 3 {
							continue
						}
						// Rows of 3 views (features of an image's transforms), 2 copies drawn.
						views, augment = int(v[0]-'0'), 2
					}
					_, refused, err := prepareHarness(algs, cfg, spec, 33)
					if err != nil {
						t.Fatalf("%s %s %s: %v", cfg.Name, mname, engine, err)
					}
					if refused != nil {
						continue
					}
					accepted++
					t.Run(fmt.Sprintf("%s/%s/%s", cfg.Name, mname, engine), func(t *testing.T) {
						t.Parallel()
						for _, n := range sizes {
							runHarnessSize(t, algs, cfg, spec, n, ranks, augment, views, w)
						}
					})
				}
			}
			if accepted == 0 {
				t.Errorf("%s: the algorithm accepted none of the harness's models: add one it accepts to harnessModels", cfg.Name)
			}
		}
	}
	t.Cleanup(func() {
		keys := make([]string, 0, len(w.m))
		for k := range w.m {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		for _, k := range keys {
			t.Logf("worst ‖ΔS‖/C %s: %.7f", k, w.m[k])
		}
	})
}

// runHarnessSize runs every neighbouring pair of one batch size n.
func runHarnessSize(t *testing.T, algs *config.Algorithms, cfg *config.Config, spec models.Spec, n, ranks, augment, views int, w *worst) {
	h, refused, err := prepareHarness(algs, cfg, spec, n)
	if err != nil || refused != nil {
		t.Fatalf("batch size %d: %v %v", n, err, refused)
	}
	h.ranks, h.augment, h.views = ranks, augment, views
	nw, err := graph.New(spec, rand.New(rand.NewPCG(1, 2)))
	if err != nil {
		t.Fatal(err)
	}
	dim, classes := 1, nw.Classes()
	for _, d := range nw.InputShape() {
		dim *= d
	}
	dim *= max(views, 1) // an example is the row of its views
	type paramSet struct {
		name   string
		params []float32
	}
	paramSets := []paramSet{{"random", nil}}
	if n >= 33 {
		paramSets = append(paramSets, paramSet{"adversarial", adversarialParams(nw, rand.New(rand.NewPCG(5, 6)))})
	}
	scales := []float64{1}
	if n == 33 {
		scales = append(scales, 1e4)
	}
	positions := []int{0, n / 2, 31, 32, n - 1}
	slices.Sort(positions)
	positions = slices.Compact(positions)
	relations := []dptest.Relation{dptest.Replace}
	if h.addRemove {
		relations = append(relations, dptest.Remove)
	}
	// An algorithm whose step draws randomness per example in batch order (DP-ULR's forward
	// perturbations) couples D and D′ position by position: removal is then tested at the
	// last position, replacement at every position.
	o, err := h.plan.NewOptimizer(1, optim.NewSeededNoise(1))
	if err != nil {
		t.Fatal(err)
	}
	_, positional := o.(interface{ PerExampleRandomness() })
	rng := rand.New(rand.NewPCG(uint64(n), 9))
	k := 0
	for _, ps := range paramSets {
		pname, params := ps.name, ps.params
		for _, s := range scales {
			x, y := dptest.Random(n, dim, classes, s, rng)
			if pname == "adversarial" { // a constant input: every position sees the same value
				for i := range x {
					x[i] = float32(s)
				}
			}
			b := data.Batch{N: n, X: x, Y: y, Index: make([]int, n)}
			for i := range b.Index {
				b.Index[i] = i
			}
			crafted := dptest.Crafted(dim, s, rng)
			if pname == "adversarial" {
				// The batch's own constant input, larger: its per-position gradients cancel.
				c := make([]float32, dim)
				for j := range c {
					c[j] = float32(-2e4 * s)
				}
				crafted = append([]dptest.Example{{Name: "constant", X: c}}, crafted...)
			}
			for _, pos := range positions {
				if pos < 0 || pos >= n {
					continue
				}
				cs := []dptest.Example{crafted[k%len(crafted)]}
				k++
				if pname == "adversarial" && k%len(crafted) != 1 {
					cs = append(cs, crafted[0])
				}
				for _, c := range cs {
					d := dptest.With(b, pos, c.X, int32(k%classes))
					other, _ := dptest.Random(1, dim, classes, s, rng)
					ref, err := dptest.Run(h.experiment(params), d)
					if err != nil {
						t.Fatalf("n %d, %s params, scale %g, %s example at %d: %v", n, pname, s, c.Name, pos, err)
					}
					for _, rel := range relations {
						var dn data.Batch
						switch rel {
						case dptest.Remove:
							if n == 1 && h.info.Scheme() == data.SchemePoissonWithRejection || positional && pos != n-1 {
								continue
							}
							dn = dptest.Without(d, pos)
						case dptest.Replace:
							dn = dptest.With(d, pos, other, int32((k+1)%classes))
						}
						ms, err := ref.Measure(dn, rel)
						if err != nil {
							t.Fatalf("n %d, %s params, scale %g, %s %s example at %d: %v", n, pname, s, rel, c.Name, pos, err)
						}
						for _, m := range ms {
							if m.Record.Mechanism != accounting.Gaussian {
								// A mechanism only a paper-labelled accountant takes (DP-ULR's paper
								// mode: the estimator's own noise, σ_l from the batch): measured, not
								// held to the bound; reports print its label.
								w.note(fmt.Sprintf("%s %s (paper only) %s", h.alg.Name, cfg.Name, rel), m.Ratio())
								continue
							}
							w.note(fmt.Sprintf("%s %s", h.alg.Name, rel), m.Ratio())
							if !m.OK() {
								t.Errorf("n %d, %s params, scale %g, %s %s example at %d: %v", n, pname, s, rel, c.Name, pos, m)
							}
						}
					}
				}
			}
		}
	}
}
