package dpmbcd

import (
	"errors"
	"fmt"
	"math"

	"github.com/dptrain/dptrain/accounting"
	"github.com/dptrain/dptrain/data"
	"github.com/dptrain/dptrain/internal/kernels"
	"github.com/dptrain/dptrain/models/lifted"
	"github.com/dptrain/dptrain/optim"
)

// NoiseControl is the shape of DP-MBCD's noise-magnitude control o(k, j) (Chen & Liu, "Hidden State Differential Private Mini-Batch Block Coordinate Descent", Eq. 6) over
// epochs k (from 0): o(k, j) = o_ref·Factor(k), with o_ref set by the noise multiplier (see
// Config), so calibration scales the whole schedule.
type NoiseControl struct {
	// Kind is "constant" (Factor 1), "linear" or "piecewise".
	Kind string
	// Rate is the linear decrease (Appendix D.2's "decrease of 0.00025 per epoch", read as): o(k) = o_final + rate·(K−k)
	// for 1-indexed epochs, here Factor(k) = 1 + Rate·(Epochs−1−k), so the last epoch has o_ref.
	Rate float64
	// Epochs is K, the planned number of epochs (linear only).
	Epochs int
	// From and Factors define the piecewise schedule: Factors[i] applies from epoch From[i]
	// (From[0] must be 0, increasing).
	From    []int
	Factors []float64
}

// Validate checks the schedule's parameters.
func (c NoiseControl) Validate() error {
	switch c.Kind {
	case "", "constant":
	case "linear":
		if !(c.Rate >= 0) || math.IsInf(c.Rate, 1) || c.Epochs <= 0 {
			return fmt.Errorf("dpmbcd: linear noise control needs rate ≥ 0 (got %v) and the planned epochs > 0 (got %d)", c.Rate, c.Epochs)
		}
	case "piecewise":
		if len(c.From) == 0 || len(c.From) != len(c.Factors) || c.From[0] != 0 {
			return errors.New("dpmbcd: piecewise noise control needs as many factors as start epochs, the first starting at epoch 0")
		}
		for i := range c.From {
			if i > 0 && c.From[i] <= c.From[i-1] {
				return fmt.Errorf("dpmbcd: piecewise noise control: start epochs must increase (%d after %d)", c.From[i], c.From[i-1])
			}
			if !(c.Factors[i] > 0) || math.IsInf(c.Factors[i], 1) {
				return fmt.Errorf("dpmbcd: piecewise noise control factor %v: want > 0", c.Factors[i])
			}
		}
	default:
		return fmt.Errorf("dpmbcd: noise control %q: want constant, linear or piecewise", c.Kind)
	}
	return nil
}

// Factor returns o(k, ·)/o_ref for epoch k (from 0).
func (c NoiseControl) Factor(k int) float64 {
	switch c.Kind {
	case "linear":
		return 1 + c.Rate*float64(max(c.Epochs-1-k, 0))
	case "piecewise":
		f := c.Factors[0]
		for i, from := range c.From {
			if k >= from {
				f = c.Factors[i]
			}
		}
		return f
	}
	return 1
}

// LiftedNetwork is what DP-MBCD needs from a lifted MLP (*lifted.MLP of package models/lifted
// satisfies it): D+1 released weight blocks and the hidden auxiliaries behind them.
type LiftedNetwork interface {
	// Blocks is the number D+1 of released weight blocks and Shape(d) block d's In×Out.
	Blocks() int
	Shape(d int) (in, out int)
	// Smoothness is block d's smoothness bound β_d (+Inf where there is none).
	Smoothness(d int) float64
	// Update runs the hidden updates for batch b at the weights w (one In×Out row-major slice
	// per block) and returns the blocks' sub-problems.
	Update(w [][]float32, b data.Batch) (*lifted.Problems, error)
	// State and Restore give and replace the kept auxiliaries (see lifted.MLP).
	State() (aux []float32, seen []bool)
	Restore(aux []float32, seen []bool) error
}

// Config configures DP-MBCD on a lifted MLP (Chen & Liu, Algorithm 4).
type Config struct {
	// Lifted holds the hidden auxiliaries; its blocks are the released weights.
	Lifted LiftedNetwork
	// Offsets are the positions of the D+1 weight blocks in the parameter vector (each
	// In×Out row-major, layer.Param of a bias-free MLP).
	Offsets []int
	// NoiseMultiplier is σ at the reference o_ref: the clipped gradient sum of each block gets
	// noise of std σ·C·sqrt(Factor(k)) per coordinate, so the parameter noise variance is
	// (η·std/b)² = 2η·o(k, j) with o(k, j) = η·σ²C²·Factor(k)/(2b²) (Eq. 14). 0: the
	// non-private MBCD baseline through the same code.
	NoiseMultiplier float64
	// ClipNorm is C, the per-example clip of each block gradient (S_g = 2C replace-one).
	ClipNorm float64
	// Control is o(k, j)'s shape over epochs.
	Control NoiseControl
	// Schedule gives η of each step.
	Schedule optim.Schedule
	// L2 is λ of the prox of (λ/2)‖W‖² (W/(1+ηλ), L_T = 1/(1+ηλ); the paper prints η/(1+η)·θ); 0: none.
	L2 float64
	// Implicit selects the W-update the paper's experiments ran, Eq. (17) with the sign
	// sign typos corrected and s = 1/b:
	//	W_d ← (I + (η/b)·X_dᵀX_d)⁻¹ (W_d + (η/b)·(Σ_i clip_C(x_i t_iᵀ) + N(0, std²·I)))
	// (row form), a proximal-point step. The data-dependent map after the noise is covered by
	// the paper's heuristic argument only, so a run using it must declare the paper's L_F
	// (accounting.Run.GradientLipschitz), which certified accountants refuse.
	Implicit bool
	// Sum replaces the batch mean by the batch sum in the W-update (s = 1 instead of 1/b, the
	// reduction Eq. 17 prints): W_d − η·(Σ_i clip_C(g_{d,i}) + N(0, std²·I)), or its implicit
	// form with (I + η·X_dᵀX_d)⁻¹. That is the mean update at step size η·b, so the records
	// declare StepSize η·b (optim.Normaliser's convention: the update moves the parameters by
	// −(StepSize/b) times the released sum) and the accountants see the true sensitivity
	// η·S_g of the update and its smoothness b·β_d: L_F = |1 − η·b·β_d|, and
	// o = η·b·std²/(2b²), so Δ = η·b·S_g²/(4b²·o) = S_g²/(2·std²), b² times what Theorem 4.6
	// charges for the paper's o with the mean's sensitivity η·S_g/b.
	Sum bool
}

// Optimizer is DP-MBCD's step (Chen & Liu, Algorithm 4 with the explicit W-update Eq. 14): the hidden
// updates of package lifted, then for every released block W_d
//
//	W_d ← Prox_{η,λ}( W_d − (η/b)·( Σ_i clip_C(g_{d,i}) + N(0, std²·I) ) ),
//
// g_{d,i} = x_{d,i}(W_d x_{d,i} − t_{d,i})ᵀ, one Gaussian record per block (η in place of η/b
// with Config.Sum).
type Optimizer struct {
	cfg   Config
	noise *optim.Noise
	grad  []float32
	zero  []float32
	buf   []float32
	xbuf  []float32
	k     int
}

// New checks cfg and returns the optimizer.
func New(cfg Config, noise *optim.Noise) (*Optimizer, error) {
	if noise == nil {
		return nil, errors.New("dpmbcd: DP-MBCD needs a noise source: use NewNoise()")
	}
	if cfg.Lifted == nil || len(cfg.Offsets) != cfg.Lifted.Blocks() {
		return nil, errors.New("dpmbcd: DP-MBCD needs a lifted MLP and the offset of each of its weight blocks")
	}
	if cfg.Schedule == nil {
		return nil, errors.New("dpmbcd: DP-MBCD needs a learning-rate schedule")
	}
	if err := optim.CheckNoiseClip(cfg.NoiseMultiplier, cfg.ClipNorm); err != nil {
		return nil, err
	}
	if !(cfg.L2 >= 0) || math.IsInf(cfg.L2, 1) {
		return nil, fmt.Errorf("dpmbcd: DP-MBCD l2 prox strength %v: want ≥ 0", cfg.L2)
	}
	if err := cfg.Control.Validate(); err != nil {
		return nil, err
	}
	if cfg.Implicit && cfg.L2 > 0 {
		return nil, errors.New("dpmbcd: DP-MBCD's implicit W-update is already a proximal step: use l2 = 0 with it")
	}
	return &Optimizer{cfg: cfg, noise: noise}, nil
}

// UpdateRule implements optim.Optimizer: plain noisy proximal gradient steps.
func (o *Optimizer) UpdateRule() string { return "sgd" }

// Stateful implements optim.Optimizer: no noisy gradient is carried across steps (the auxiliaries
// are hidden blocks, minimised exactly, never released).
func (o *Optimizer) Stateful() bool { return false }

// Steps implements optim.Optimizer.
func (o *Optimizer) Steps() int { return o.k }

// Declare implements optim.Declarer.
func (o *Optimizer) Declare(info data.BatchInfo) ([]accounting.Step, error) {
	return o.DeclareStep(o.k, info)
}

// DeclareStep implements optim.StepDeclarer: one Gaussian record per released block, with its
// block id, the batch index and the block's smoothness β_d = ρ_d² (Lemma B.1).
func (o *Optimizer) DeclareStep(k int, info data.BatchInfo) ([]accounting.Step, error) {
	p, err := optim.PlanBatch(info, optim.DeclaredBatch(info))
	if err != nil {
		return nil, err
	}
	return o.records(k, p)
}

func (o *Optimizer) records(k int, p optim.BatchPlan) ([]accounting.Step, error) {
	lr := o.cfg.Schedule.StepSize(k)
	if err := optim.CheckStepSize(lr, k); err != nil {
		return nil, err
	}
	epoch := k / max(p.Info.DatasetSize/max(p.Info.BatchSize, 1), 1)
	std := 0.0 // σ = 0 with C = +Inf: the non-private baseline, not NaN
	if o.cfg.NoiseMultiplier > 0 {
		std = o.cfg.NoiseMultiplier * o.cfg.ClipNorm * math.Sqrt(o.cfg.Control.Factor(epoch))
	}
	if o.cfg.Sum { // the summed step at η is the mean step at η·b (Config.Sum)
		lr *= p.Norm
	}
	recs := make([]accounting.Step, o.cfg.Lifted.Blocks())
	for d := range recs {
		recs[d] = p.Record(o.cfg.ClipNorm, std, lr)
		recs[d].Block = d
		if beta := o.cfg.Lifted.Smoothness(d); !math.IsInf(beta, 1) {
			recs[d].Smoothness = beta
		}
	}
	return recs, nil
}

// BlockSpan implements optim.BlockReleaser: the record of block d releases the noisy clipped
// gradient sum of the weights params[offset : offset+n].
func (o *Optimizer) BlockSpan(d int) (offset, n int) {
	in, out := o.cfg.Lifted.Shape(d)
	return o.cfg.Offsets[d], in * out
}

// accuracyModel is the part of models.Model the step uses for its monitoring statistics.
type accuracyModel interface {
	Evaluate(b data.Batch) (data.Stats, error)
}

// Step implements optim.Optimizer.
func (o *Optimizer) Step(m optim.GradientOracle, b data.Batch, info data.BatchInfo) (optim.Result, error) {
	p, err := optim.PlanBatch(info, b)
	if err != nil {
		return optim.Result{}, err
	}
	if p.Info.Sampling == accounting.Poisson || p.Info.Sampling == accounting.PoissonWithRejection {
		return optim.Result{}, errors.New("dpmbcd: DP-MBCD needs fixed-size batches (sampling shuffled-once)")
	}
	recs, err := o.records(o.k, p)
	if err != nil {
		return optim.Result{}, err
	}
	var st data.Stats
	if em, ok := m.(accuracyModel); ok { // monitoring only: before the step, not released
		if st, err = em.Evaluate(b); err != nil {
			return optim.Result{}, err
		}
	}
	params := m.Params()
	w := make([][]float32, o.cfg.Lifted.Blocks())
	for d := range w {
		in, out := o.cfg.Lifted.Shape(d)
		off := o.cfg.Offsets[d]
		if off < 0 || off+in*out > len(params) {
			return optim.Result{}, fmt.Errorf("dpmbcd: DP-MBCD block %d (%d×%d at %d) outside the %d parameters", d, in, out, off, len(params))
		}
		w[d] = params[off : off+in*out]
	}
	b, st.NonFinite = o.finiteInputs(b)
	prob, err := o.cfg.Lifted.Update(w, b)
	if err != nil {
		return optim.Result{}, fmt.Errorf("dpmbcd: DP-MBCD step %d: %w", o.k, err)
	}
	lr := o.cfg.Schedule.StepSize(o.k)
	scale := lr / p.Norm // s = 1/b
	if o.cfg.Sum {
		scale = lr // s = 1; the records declare η·b
	}
	shrink := 1 / (1 + lr*o.cfg.L2) // ℓ2 prox θ/(1+ηλ) (Chen & Liu print η/(1+η)·θ)
	for d := range w {
		in, out := o.cfg.Lifted.Shape(d)
		o.grad = optim.Resize(o.grad, in*out)
		wd := w[d]
		if o.cfg.Implicit { // −Σ_i clip_C(x_i t_iᵀ): the block gradient at W = 0
			o.zero = optim.Resize(o.zero, in*out)
			wd = o.zero
		}
		var clipped int
		clipped, o.buf, err = kernels.BlockGradient(o.grad, wd, prob.In[d], prob.Target[d], prob.N, in, out, o.cfg.ClipNorm, o.buf)
		if err != nil {
			return optim.Result{}, fmt.Errorf("dpmbcd: DP-MBCD step %d block %d: %w", o.k, d, err)
		}
		st.Clipped = max(st.Clipped, clipped)
		o.noise.AddGaussian(o.grad, recs[d].NoiseStd) // Eq. (14): N(0, 2η·o) after the 1/b scaling
		if err := optim.ScaleFinite(o.grad, scale); err != nil {
			return optim.Result{}, fmt.Errorf("dpmbcd: DP-MBCD step %d block %d: %w", o.k, d, err)
		}
		for i, g := range o.grad {
			w[d][i] = float32(float64(w[d][i]-g) * shrink)
		}
		if o.cfg.Implicit {
			if err := kernels.ProximalSolve(w[d], prob.In[d], prob.N, in, out, scale); err != nil {
				return optim.Result{}, fmt.Errorf("dpmbcd: DP-MBCD step %d block %d: %w", o.k, d, err)
			}
		}
	}
	o.k++
	return optim.Result{Records: recs, Stats: st, StepSize: lr}, nil
}

// finiteInputs returns b with every example whose input is not finite replaced by the zero
// input, and how many were: a per-example map (the example's own blocks are still clipped to
// C), so that whether a step runs never depends on one example. b.X is copied only if a row
// changes.
func (o *Optimizer) finiteInputs(b data.Batch) (data.Batch, int) {
	if b.N == 0 {
		return b, 0
	}
	d, bad := len(b.X)/b.N, 0
	for i := range b.N {
		row := b.X[i*d : (i+1)*d]
		var chk float32
		for _, v := range row {
			chk += v - v
		}
		if chk == 0 {
			continue
		}
		if bad == 0 {
			o.xbuf = append(o.xbuf[:0], b.X...)
			b.X = o.xbuf
		}
		clear(b.X[i*d : (i+1)*d])
		bad++
	}
	return b, bad
}

// Names of DP-MBCD's state entries in checkpoints.
const (
	stateAux     = "auxiliaries" // vector: the kept hidden auxiliaries
	stateVisited = "visited"     // vector: 0/1 mask of the examples visited
)

// State implements optim.Checkpointer: the step counter and the lifted network's kept auxiliaries
// (hidden, never released, but needed for a bit-identical resume) with the visited mask as
// 0/1 values.
func (o *Optimizer) State() (map[string][]float32, map[string]float64) {
	vecs := map[string][]float32{}
	if aux, seen := o.cfg.Lifted.State(); aux != nil {
		mask := make([]float32, len(seen))
		for i, s := range seen {
			if s {
				mask[i] = 1
			}
		}
		vecs[stateAux], vecs[stateVisited] = aux, mask
	}
	return vecs, map[string]float64{optim.StateSteps: float64(o.k)}
}

// Restore implements optim.Checkpointer.
func (o *Optimizer) Restore(vecs map[string][]float32, sc map[string]float64) error {
	k, err := optim.StateCount(sc, optim.StateSteps, "DP-MBCD step counter")
	if err != nil {
		return err
	}
	var seen []bool
	if mask, ok := vecs[stateVisited]; ok {
		seen = make([]bool, len(mask))
		for i, v := range mask {
			seen[i] = v != 0
		}
	}
	if (vecs[stateAux] == nil) != (seen == nil) {
		return errors.New("dpmbcd: DP-MBCD state has auxiliaries without the visited mask or the reverse")
	}
	if err := o.cfg.Lifted.Restore(vecs[stateAux], seen); err != nil {
		return err
	}
	o.k = k
	return nil
}

// NoiseStream implements optim.NoiseDrawer: the stream the optimizer was built with.
func (o *Optimizer) NoiseStream() *optim.Noise { return o.noise }
