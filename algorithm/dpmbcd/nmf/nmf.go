package nmf

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"

	"gonum.org/v1/gonum/blas"
	"gonum.org/v1/gonum/blas/blas32"

	"github.com/dptrain/dptrain/accounting"
	"github.com/dptrain/dptrain/models/lifted"
	"github.com/dptrain/dptrain/optim"
)

// Config describes a mini-batch NMF run.
type Config struct {
	// Rank is r, the inner dimension of X Y.
	Rank int
	// Eta is η; Kappa is κ of the Hessian-normalised step η_eff = min(η, κ/β) (the form of
	// Chen & Liu's proof of Lemma 4.1, Appendix C.1).
	Eta, Kappa float64
	// RowNorm is ρ: every hidden row of X is kept in {x ≥ 0, ‖x‖ ≤ ρ}, so the Y sub-problem
	// is β = ρ²-smooth with a public β.
	RowNorm float64
	// Clip is C, the per-example clip of Y's row gradients x_iᵀ(x_iY − m_i) (S_g = 2C
	// replace-one); +Inf: none (only with NoiseMultiplier 0).
	Clip float64
	// NoiseMultiplier is σ: noise of std σC on the clipped sum. 0: the non-private MBCD (or
	// SGD) baseline through the same code.
	NoiseMultiplier float64
	// InnerSteps is the number of projected gradient steps on the hidden X rows per visit
	// (alternating mode; the joint mode takes one).
	InnerSteps int
	// Joint selects the DP-SGD baseline: X_B and Y stepped from the same point.
	Joint bool
	// Recompute restarts the batch's hidden rows from their (public, data-independent)
	// initial values at every visit before the InnerSteps, so that a Y step depends only on
	// the current Y and the batch: the condition under which mbcd-certified covers the run
	// (accounting/mbcd Requirements). Alternating mode only.
	Recompute bool
}

// Validate checks the configuration.
func (c Config) Validate() error {
	switch {
	case c.Rank <= 0:
		return fmt.Errorf("nmf: rank %d: want > 0", c.Rank)
	case !(c.Eta > 0) || math.IsInf(c.Eta, 1) || !(c.Kappa > 0) || math.IsInf(c.Kappa, 1):
		return fmt.Errorf("nmf: η = %v and κ = %v: want both positive and finite", c.Eta, c.Kappa)
	case !(c.RowNorm > 0) || math.IsInf(c.RowNorm, 1):
		return fmt.Errorf("nmf: row norm ρ = %v: want positive and finite (it bounds the Y sub-problem's smoothness by ρ²)", c.RowNorm)
	case !(c.Clip > 0):
		return fmt.Errorf("nmf: clip norm %v: want > 0 (+Inf: none, non-private only)", c.Clip)
	case !(c.NoiseMultiplier >= 0) || math.IsInf(c.NoiseMultiplier, 1):
		return fmt.Errorf("nmf: noise multiplier %v: want ≥ 0 and finite", c.NoiseMultiplier)
	case c.NoiseMultiplier > 0 && math.IsInf(c.Clip, 1):
		return errors.New("nmf: a private run needs a finite clip norm: set the clip C")
	case c.Recompute && c.Joint:
		return errors.New("nmf: recompute restarts the hidden rows before the alternating inner steps; the joint (DP-SGD) mode takes one step from the carried rows: drop one of them")
	case c.InnerSteps < 1:
		return fmt.Errorf("nmf: %d inner steps on the hidden rows: want ≥ 1", c.InnerSteps)
	}
	return nil
}

// Model holds M (private), the hidden rows X and the released factor Y, all row-major
// float32.
type Model struct {
	cfg        Config
	n, c       int
	m          []float32
	x, y, x0   []float32
	k          int
	grad, buf  []float32
	xb, mb, rb []float32
}

// New returns a model of M (n rows of c values) with X and Y drawn uniformly from [0, 1)
// by init, which must not depend on M (the accountants take the initialisation as public),
// and X's rows projected into the ρ-ball.
func New(cfg Config, m []float32, n, c int, init *rand.Rand) (*Model, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if n <= 0 || c <= 0 || len(m) != n*c {
		return nil, fmt.Errorf("nmf: %d values for a %d×%d matrix", len(m), n, c)
	}
	if cfg.Rank > min(n, c) {
		return nil, fmt.Errorf("nmf: rank %d above min(%d, %d)", cfg.Rank, n, c)
	}
	for i, v := range m {
		if v-v != 0 {
			return nil, fmt.Errorf("nmf: M[%d, %d] is %v: non-finite data is refused", i/c, i%c, v)
		}
	}
	md := &Model{cfg: cfg, n: n, c: c, m: m, x: make([]float32, n*cfg.Rank), y: make([]float32, cfg.Rank*c)}
	for i := range md.x {
		md.x[i] = float32(init.Float64())
	}
	for i := range md.y {
		md.y[i] = float32(init.Float64())
	}
	for i := range n {
		md.project(md.x[i*cfg.Rank : (i+1)*cfg.Rank])
	}
	if cfg.Recompute {
		md.x0 = append([]float32(nil), md.x...)
	}
	return md, nil
}

// X returns the hidden factor (n×r, aliasing the model's storage): never release it.
func (md *Model) X() []float32 { return md.x }

// Y returns the released factor (r×c, aliasing the model's storage).
func (md *Model) Y() []float32 { return md.y }

// SetNoiseMultiplier sets σ (calibration before the first step); it refuses a change that the
// configuration would refuse.
func (md *Model) SetNoiseMultiplier(sigma float64) error {
	cfg := md.cfg
	cfg.NoiseMultiplier = sigma
	if err := cfg.Validate(); err != nil {
		return err
	}
	md.cfg = cfg
	return nil
}

// Steps returns the number of Y steps taken.
func (md *Model) Steps() int { return md.k }

// Smoothness is β = ρ², the public bound on the Y sub-problem's Hessian ‖X_BᵀX_B‖/b.
func (md *Model) Smoothness() float64 { return md.cfg.RowNorm * md.cfg.RowNorm }

// StepSize is η_eff = min(η, κ/β), the same at every step.
func (md *Model) StepSize() float64 { return math.Min(md.cfg.Eta, md.cfg.Kappa/md.Smoothness()) }

// Run is what the accountants are told about the whole run: last iterate of Y only, plain
// projected noisy gradient steps (the projection is a convex prox, L_T = 1), a convex
// β-smooth block, data-independent initialisation.
func (md *Model) Run() accounting.Run {
	return accounting.Run{LastIterateOnly: true, UpdateRule: "sgd", DatasetSize: md.n,
		Convexity: accounting.Convex, Smoothness: md.Smoothness(), ProxLipschitz: 1}
}

// Declare returns the record of a Y step on a batch of b rows with index j in a shuffle-once
// partition of the n rows, as Step returns it.
func (md *Model) Declare(b, j int) accounting.Step {
	s := accounting.Step{Mechanism: accounting.Gaussian, Sampling: accounting.ShuffledOnce,
		Neighbouring: accounting.ReplaceOne, SampleRate: float64(b) / float64(md.n), Count: 1,
		Sensitivity: md.cfg.Clip, NoiseStd: md.cfg.NoiseMultiplier * md.cfg.Clip,
		StepSize: md.StepSize(), BatchSize: b, DatasetSize: md.n, BatchIndex: j}
	if md.cfg.NoiseMultiplier > 0 {
		s.NoiseMultiplier = md.cfg.NoiseMultiplier
	} else {
		s.Mechanism, s.NoiseStd = accounting.NonPrivate, 0
	}
	return s
}

// project maps x onto {x ≥ 0, ‖x‖ ≤ ρ}.
func (md *Model) project(x []float32) {
	sq := 0.0
	for i, v := range x {
		if v < 0 {
			x[i] = 0
		} else {
			sq += float64(v) * float64(v)
		}
	}
	if norm := math.Sqrt(sq); norm > md.cfg.RowNorm {
		s := float32(md.cfg.RowNorm / norm)
		if float64(s)*norm > md.cfg.RowNorm {
			s = math.Nextafter32(s, 0)
		}
		for i := range x {
			x[i] *= s
		}
	}
}

// rowStep takes one projected gradient step on the rows xb (b×r) of the hidden factor towards
// mb, the Hessian-normalised η_X = min(η, κ/‖YYᵀ‖_F).
func (md *Model) rowStep(xb, mb []float32, b int) {
	r, c := md.cfg.Rank, md.c
	gram := 0.0 // ‖YYᵀ‖_F² ≥ ‖YYᵀ‖_2²
	for p := range r {
		for q := range r {
			v := 0.0
			for j := range c {
				v += float64(md.y[p*c+j]) * float64(md.y[q*c+j])
			}
			gram += v * v
		}
	}
	eta := md.cfg.Eta
	if h := math.Sqrt(gram); h > 0 {
		eta = math.Min(eta, md.cfg.Kappa/h)
	}
	md.rb = zeroed(md.rb, c)
	res := blas32.Vector{N: c, Inc: 1, Data: md.rb}
	yg := blas32.General{Rows: r, Cols: c, Stride: c, Data: md.y}
	// Row by row, two gemvs of fixed shape per row: a row's step as part of a GEMM over the
	// batch would be computed with arithmetic that depends on its offset in the batch
	// (OpenBLAS's kernels take different paths for different row offsets), so the example's
	// hidden row, and its gradient in the clipped sum, would depend on its slot and neighbours.
	for i := range b {
		x := blas32.Vector{N: r, Inc: 1, Data: xb[i*r : (i+1)*r]}
		copy(md.rb, mb[i*c:(i+1)*c])
		blas32.Gemv(blas.Trans, 1, yg, x, -1, res)              // r_i = x_i Y − m_i
		blas32.Gemv(blas.NoTrans, float32(-eta), yg, res, 1, x) // x_i −= η_X r_i Yᵀ
		md.project(x.Data)
	}
}

// Step updates the rows rows (one batch, index j of a shuffle-once partition) and then Y,
// with noise from noise, and returns the step's record.
func (md *Model) Step(rows []int, j int, noise *optim.Noise) (accounting.Step, error) {
	b, r, c := len(rows), md.cfg.Rank, md.c
	if b == 0 {
		return accounting.Step{}, errors.New("nmf: empty batch")
	}
	if noise == nil {
		return accounting.Step{}, errors.New("nmf: no noise source: use optim.NewNoise()")
	}
	rec := md.Declare(b, j)
	md.xb, md.mb = zeroed(md.xb, b*r), zeroed(md.mb, b*c)
	for k, i := range rows {
		if i < 0 || i >= md.n {
			return accounting.Step{}, fmt.Errorf("nmf: row %d outside the %d rows", i, md.n)
		}
		src := md.x
		if md.cfg.Recompute {
			src = md.x0
		}
		copy(md.xb[k*r:(k+1)*r], src[i*r:(i+1)*r])
		copy(md.mb[k*c:(k+1)*c], md.m[i*c:(i+1)*c])
	}
	var xOld []float32
	if md.cfg.Joint {
		xOld = append(xOld, md.xb...)
		md.rowStep(md.xb, md.mb, b)
	} else {
		for range md.cfg.InnerSteps {
			md.rowStep(md.xb, md.mb, b)
		}
		xOld = md.xb
	}
	if err := md.clippedSum(xOld, md.mb, b); err != nil {
		return accounting.Step{}, err
	}
	noise.AddGaussian(md.grad, rec.NoiseStd)
	scale := rec.StepSize / float64(b)
	for i, g := range md.grad {
		v := float64(md.y[i]) - float64(g)*scale
		if math.IsNaN(v) || math.IsInf(v, 0) {
			return accounting.Step{}, fmt.Errorf("nmf: step %d: Y[%d] became %v: lower the step size", md.k, i, v)
		}
		md.y[i] = float32(math.Max(v, 0)) // the prox of the indicator of R_+ (L_T = 1)
	}
	for k, i := range rows {
		copy(md.x[i*r:(i+1)*r], md.xb[k*r:(k+1)*r])
	}
	md.k++
	return rec, nil
}

// clippedSum sets md.grad to Σ_i clip_C(x_iᵀ(x_i Y − m_i)) over the b rows xb of X and mb of
// M, with the shared per-example clipping kernels.
func (md *Model) clippedSum(xb, mb []float32, b int) error {
	r, c := md.cfg.Rank, md.c
	md.grad = zeroed(md.grad, r*c)
	var err error
	if _, md.buf, err = lifted.BlockGradient(md.grad, md.y, xb, mb, b, r, c, md.cfg.Clip, md.buf); err != nil {
		return fmt.Errorf("nmf: step %d: %w (lower the step size or the row norm ρ)", md.k, err)
	}
	return nil
}

// Objective returns ½‖XY − M‖_F² and the relative error ‖XY − M‖_F/‖M‖_F (float64 sums).
func (md *Model) Objective() (half, rel float64) {
	r, c := md.cfg.Rank, md.c
	var res, norm float64
	for i := range md.n {
		for j := range c {
			v := 0.0
			for p := range r {
				v += float64(md.x[i*r+p]) * float64(md.y[p*c+j])
			}
			d := v - float64(md.m[i*c+j])
			res += d * d
			norm += float64(md.m[i*c+j]) * float64(md.m[i*c+j])
		}
	}
	return res / 2, math.Sqrt(res / norm)
}

// zeroed returns n zeros in buf's storage when it is large enough.
func zeroed(buf []float32, n int) []float32 {
	buf = slices.Grow(buf[:0], n)[:n]
	clear(buf)
	return buf
}
