package audit

import (
	"fmt"
	"math"
	"math/rand/v2"
	"sort"
	"sync"

	"github.com/dptrain/dptrain/data"
	"github.com/dptrain/dptrain/models"
	"github.com/dptrain/dptrain/optim"
	"github.com/dptrain/dptrain/train"
)

// gradientCanaries are the all-iterates audit's canaries: canary i is the gradient
// norm·u_i, where u_i has s non-zero coordinates, each ±1/√s, on a support disjoint from every
// other canary's (s = 1: a Dirac canary). With s equal to ModelMix's l∞ parts p, l2 clipping
// to C leaves a canary exactly at ModelMix's l∞ bound C/√p, so its l∞ truncation keeps it.
//
// The canary's norm before clipping is large (CanaryNorm × C): a private step clips it to C
// like any example, and a non-private run (no clipping) shows its unbounded sensitivity.
type gradientCanaries struct {
	support  [][]int     // coordinates of u_i
	signs    [][]float32 // ±1 per coordinate
	norm     float64     // the canary's gradient norm before clipping: the config's clip_norm
	included []bool
	rate     float64 // q: the chance an included canary joins a step's batch
	rng      *rand.Rand
	buf      []float32
	// injections counts the gradient sums the canaries were offered to since the last step.
	injections int

	// Scoring from the released iterates.
	model  models.Model
	prev   [][]float32
	scores []float64
}

// CanaryNorm is a gradient canary's norm before clipping, in clip norms.
const CanaryNorm = 100

// newGradientCanaries places the canaries on the coordinates the data uses least: usage[j] is
// a measure of how much the base data's gradients move coordinate j (quietCoordinates), ties
// broken at random. Data gradients on a canary's coordinates add to its score as noise the
// auditor cannot remove, so quiet coordinates give the audit power; the choice depends only on
// the base data and θ₀, never on which canaries are included.
func newGradientCanaries(included []bool, usage []float64, s int, norm float64, rng *rand.Rand) (*gradientCanaries, error) {
	m, params := len(included), len(usage)
	if m*s > params {
		return nil, fmt.Errorf("audit: %d gradient canaries with %d coordinates each need %d parameters, the model has %d: lower --canaries", m, s, m*s, params)
	}
	if !(norm > 0) || math.IsInf(norm, 0) {
		return nil, fmt.Errorf("audit: gradient canaries need a finite optimizer.clip_norm > 0 (got %v)", norm)
	}
	perm := rng.Perm(params)
	sort.SliceStable(perm, func(a, b int) bool { return usage[perm[a]] < usage[perm[b]] })
	c := &gradientCanaries{norm: norm, included: included, rng: rng, scores: make([]float64, m)}
	for i := range m {
		sup := append([]int(nil), perm[i*s:(i+1)*s]...)
		sg := make([]float32, s)
		for j := range sg {
			sg[j] = 1
			if rng.IntN(2) == 0 {
				sg[j] = -1
			}
		}
		c.support = append(c.support, sup)
		c.signs = append(c.signs, sg)
	}
	return c, nil
}

// wrap is train.Options.Oracle. It hides every method of the model but the gradient sums: an
// algorithm that asks for more (DP-ULR's forward-only access) fails at its first step rather
// than train without the canaries; DP-ULR is refused before that by its sampling scheme.
func (c *gradientCanaries) wrap(inner optim.GradientOracle) optim.GradientOracle {
	return &canaryOracle{GradientOracle: inner, c: c}
}

// canaryOracle adds the canaries that joined this step's batch to the clipped gradient sum:
// each is clipped exactly as the optimizer clips an example, and the optimizer then noises the
// sum. The records the step declares are unchanged: a canary is one more example, of
// contribution at most C.
type canaryOracle struct {
	optim.GradientOracle
	c *gradientCanaries
}

func (o *canaryOracle) ClippedGradSum(b data.Batch, clip float64, grad []float32, norms []float64) (data.Stats, error) {
	st, err := o.GradientOracle.ClippedGradSum(b, clip, grad, norms)
	if err != nil {
		return st, err
	}
	err = o.c.inject(grad, func(g []float32) error {
		_, err := optim.ClipL2(g, clip)
		return err
	})
	return st, err
}

func (o *canaryOracle) PerSampleGradSum(b data.Batch, f func(i int, g []float32), grad []float32) (data.Stats, error) {
	st, err := o.GradientOracle.PerSampleGradSum(b, f, grad)
	if err != nil {
		return st, err
	}
	err = o.c.inject(grad, func(g []float32) error {
		f(b.N, g)
		return nil
	})
	return st, err
}

// inject adds, for every included canary that joins this batch (probability q, independently:
// Poisson sampling of a dataset that holds it), its clipped gradient to grad.
// A canary that clip finds not finite is an error: it is never added as a silent zero.
func (c *gradientCanaries) inject(grad []float32, clip func([]float32) error) error {
	c.injections++
	if len(c.buf) != len(grad) {
		c.buf = make([]float32, len(grad))
	}
	for i, in := range c.included {
		if !in || c.rng.Float64() >= c.rate {
			continue
		}
		sup, sg := c.support[i], c.signs[i]
		v := float32(c.norm / math.Sqrt(float64(len(sup))))
		for j, k := range sup {
			c.buf[k] = sg[j] * v
		}
		if err := clip(c.buf); err != nil {
			clear(c.buf)
			return fmt.Errorf("audit: gradient canary %d cannot be clipped: %w: its norm before clipping, %d × optimizer.clip_norm = %g, overflows float32; lower optimizer.clip_norm", i, err, CanaryNorm, c.norm)
		}
		for j, x := range c.buf {
			if x != 0 {
				grad[j] += x
				c.buf[j] = 0
			}
		}
	}
	return nil
}

// start records the canary coordinates of the initial model.
func (c *gradientCanaries) start(m models.Model) {
	c.model = m
	p := m.Params()
	c.prev = make([][]float32, len(c.support))
	for i, sup := range c.support {
		c.prev[i] = make([]float32, len(sup))
		for j, k := range sup {
			c.prev[i][j] = p[k]
		}
	}
}

// AfterStep scores every canary from the update the step released: a step moves θ against
// the noisy gradient, so an included canary pushes ⟨u_i, θ_{k−1} − θ_k⟩/η_k up by its share.
func (c *gradientCanaries) AfterStep(si *train.StepInfo) error {
	if !(si.LearningRate > 0) {
		return fmt.Errorf("audit: step %d has learning rate %v: cannot score the canaries", si.Step, si.LearningRate)
	}
	if c.injections == 0 && si.BatchSize > 0 {
		return fmt.Errorf("audit: step %d took no clipped gradient sum from the model, so no gradient canary could join its batch: audit an algorithm that forms its gradients another way against the final model with --threat final-model", si.Step)
	}
	c.injections = 0
	for _, r := range si.Records {
		if s := len(c.support[0]); r.LinfParts > s {
			return fmt.Errorf("audit: the run clips every example to l∞ ≤ C/√p with p = %d (declared by its records): a canary on %d coordinate(s) would be truncated below C; rerun with --canary-support %d", r.LinfParts, s, r.LinfParts)
		}
	}
	p := c.model.Params()
	for i, sup := range c.support {
		var d float64
		for j, k := range sup {
			d += float64(c.signs[i][j]) * (float64(c.prev[i][j]) - float64(p[k]))
			c.prev[i][j] = p[k]
		}
		c.scores[i] += d / si.LearningRate
	}
	return nil
}

// quietCoordinates returns, for every parameter, Σ_i |g_ij| over the per-example gradients of
// up to 512 base examples at the current (initial) parameters.
func quietCoordinates(m models.Model, s *data.Split) ([]float64, error) {
	k := min(s.Len(), 512)
	x := make([]float32, k*s.D)
	y := make([]int32, k)
	idx := make([]int, k)
	for i := range idx {
		idx[i] = i
	}
	if err := s.Gather(idx, x, y); err != nil {
		return nil, err
	}
	usage := make([]float64, len(m.Params()))
	var mu sync.Mutex
	grad := make([]float32, len(usage))
	_, err := m.PerSampleGradSum(data.Batch{X: x, Y: y, N: k}, func(_ int, g []float32) {
		mu.Lock()
		defer mu.Unlock()
		for j, v := range g {
			usage[j] += math.Abs(float64(v))
		}
	}, grad)
	return usage, err
}
