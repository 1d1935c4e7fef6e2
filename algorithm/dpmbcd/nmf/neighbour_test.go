package nmf_test

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/dptrain/dptrain/accounting"
	"github.com/dptrain/dptrain/algorithm/dpmbcd/nmf"
	"github.com/dptrain/dptrain/data"
	"github.com/dptrain/dptrain/internal/dptest"
	"github.com/dptrain/dptrain/optim"
)

// nmfStep adapts one Y step of DP-MBCD on NMF to the harness: the batch is the whole matrix M
// (one shuffle-once batch, index 0), the released parameters are Y.
type nmfStep struct {
	cfg  nmf.Config
	seed uint64
	y    []float32 // Y before the step: the data-independent initialisation
	k    int
}

func (s *nmfStep) Params() []float32 { return s.y }
func (s *nmfStep) ClippedGradSum(data.Batch, float64, []float32, []float64) (data.Stats, error) {
	panic("unused")
}
func (s *nmfStep) PerSampleGradSum(data.Batch, func(int, []float32), []float32) (data.Stats, error) {
	panic("unused")
}
func (s *nmfStep) UpdateRule() string { return "sgd" }
func (s *nmfStep) Stateful() bool     { return false }
func (s *nmfStep) Steps() int         { return s.k }

func (s *nmfStep) Step(_ optim.GradientOracle, b data.Batch, _ data.BatchInfo) (optim.Result, error) {
	c := len(b.X) / b.N
	md, err := nmf.New(s.cfg, b.X, b.N, c, rand.New(rand.NewPCG(s.seed, 1)))
	if err != nil {
		return optim.Result{}, err
	}
	copy(md.Y(), s.y) // the harness's parameters (adversarial or the initialisation)
	rows := make([]int, b.N)
	for i := range rows {
		rows[i] = i
	}
	rec, err := md.Step(rows, 0, optim.NewSeededNoise(7))
	if err != nil {
		return optim.Result{}, err
	}
	copy(s.y, md.Y())
	s.k++
	return optim.Result{Records: []accounting.Step{rec}, StepSize: rec.StepSize}, nil
}

// TestNMFNeighbouringSensitivity drives DP-MBCD's Y step on NMF through the neighbouring-dataset
// harness: one row of M replaced (crafted rows ×10⁴, all-equal, sign patterns, at every
// position of matrices of 1 to 257 rows), both hidden-row modes, random and large Y: the
// released Y moves by at most 2C (in units of the clipped row-gradient sum).
func TestNMFNeighbouringSensitivity(t *testing.T) {
	const c, r = 12, 3
	worst := 0.0
	for _, recompute := range []bool{false, true} {
		for _, n := range []int{3, 31, 32, 33, 257} {
			cfg := nmf.Config{Rank: r, Eta: 0.5, Kappa: 0.5, RowNorm: 1.5, Clip: 0.5, NoiseMultiplier: 1e-6, InnerSteps: 5, Recompute: recompute}
			s, err := data.NewSampler(data.SchemeShuffledOnce, n, n, 0, rand.New(rand.NewPCG(1, 2)))
			if err != nil {
				t.Fatal(err)
			}
			info := data.PlannedBatch(s, 0)
			rng := rand.New(rand.NewPCG(uint64(n), 3))
			for _, yScale := range []float64{1, 1e3} {
				y := make([]float32, r*c)
				for i := range y {
					y[i] = float32(yScale * rng.Float64())
				}
				x, _ := dptest.Random(n, c, 1, 1, rng)
				for i := range x {
					x[i] = max(x[i], 0) + 0.1 // M ≥ 0
				}
				b := data.Batch{N: n, X: x, Y: make([]int32, n)}
				e := dptest.Experiment{Info: info, New: func() (optim.Optimizer, optim.GradientOracle, error) {
					st := &nmfStep{cfg: cfg, seed: uint64(n), y: append([]float32(nil), y...)}
					return st, st, nil
				}}
				crafted := dptest.Crafted(c, 1, rng)[:4] // finite crafts: New refuses non-finite data
				for k, pos := range []int{0, n / 2, 31, 32, n - 1} {
					if pos >= n {
						continue
					}
					cr := crafted[k%len(crafted)]
					abs := make([]float32, c)
					for j, v := range cr.X {
						abs[j] = max(v, -v)
					}
					d := dptest.With(b, pos, abs, 0)
					dn := dptest.With(d, pos, x[:c], 0)
					ms, err := dptest.Measure(e, d, dn, dptest.Replace)
					if err != nil {
						t.Fatalf("n %d, recompute %v, Y scale %g, %s row at %d: %v", n, recompute, yScale, cr.Name, pos, err)
					}
					for _, m := range ms {
						worst = max(worst, m.Ratio())
						if !m.OK() {
							t.Errorf("n %d, recompute %v, Y scale %g, %s row at %d: %v", n, recompute, yScale, cr.Name, pos, m)
						}
					}
				}
			}
		}
	}
	t.Logf("worst ‖ΔY‖/C over replacements: %s", fmt.Sprintf("%.7f", worst))
}
