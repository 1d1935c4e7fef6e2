package dpulr

import (
	"errors"
	"fmt"
	"math"

	"gonum.org/v1/gonum/mat"

	"github.com/dptrain/dptrain/accounting"
	"github.com/dptrain/dptrain/data"
	"github.com/dptrain/dptrain/internal/kernels"
	"github.com/dptrain/dptrain/layer"
	"github.com/dptrain/dptrain/optim"
)

// ForwardOracle is what DP-ULR needs from a model: no gradients, only forward passes
// (models.Network satisfies it).
type ForwardOracle interface {
	Params() []float32
	LinearLayers() []layer.Linear
	Trace(b data.Batch) (layer.Trace, error)
	PerturbedLosses(b data.Batch, noise [][]float32, loss []float64) error
	// PerturbedLossesFrom is PerturbedLosses with noise on one layer only, resumed from that
	// layer's clean output in tr = Trace(b) instead of recomputing the layers before it.
	PerturbedLossesFrom(b data.Batch, tr layer.Trace, layer int, noise []float32, loss []float64) error
}

// Config configures DP-ULR (Feng et al., "Forward Learning with Differential Privacy", Algorithm 1).
type Config struct {
	// Copies is K, the noisy forward passes per example and layer.
	Copies int
	// NoiseMultiplier is σ0 and ClipNorm C: every direction of the released gradient sum
	// carries noise of variance at least σ0²C².
	NoiseMultiplier, ClipNorm float64
	// Sigma, when positive, is the injected σ_l of every layer: a public constant, so that
	// no example's estimate depends on the other examples of the batch (optimizer.dp_ulr's
	// default, controller fixed, sigma 1). 0: σ_l comes from the privacy controller (Eq. 7),
	// which sets it from the eigenvalues of a matrix summed over the batch (controller eq7);
	// certified mode refuses it.
	Sigma float64
	// SigmaFloor and SigmaCap clamp the controller's σ_l (the paper's Eq. 7 is an upper bound
	// and a small λ_min sends it to 0 or ∞); SigmaCap 0: none. Unused when Sigma is set.
	SigmaFloor, SigmaCap float64
	// Certified uses the likelihood-ratio estimate only as a per-example gradient estimator
	// and adds explicit isotropic N(0, σ0²C²) noise to the clipped sum (a Gaussian release
	// accounted like DP-SGD); otherwise the paper's mechanism: the estimator's own noise plus
	// the eigen-direction top-up (the paper's "Remediation for violation of
	// Assumption 3.3", Section 3.2), declared as sampled-with-rejection-gaussian.
	Certified bool
	// AllLayers injects noise at every layer at once (K forward passes per step instead of K
	// per layer); Algorithm 1 perturbs one layer at a time.
	AllLayers bool
	// Rule is the update rule applied to the privatised gradient (post-processing); nil: SGD.
	Rule optim.UpdateRule
	// Schedule gives the learning rate of each step.
	Schedule optim.Schedule
	// Warnf, when not nil, receives the operator-only warning that the controller's σ_l ran
	// away (RunawayFactor).
	Warnf func(format string, args ...any)
}

// RunawayFactor is how far the Eq. 7 controller's σ_l may grow above its first value on a layer
// before the optimizer warns, once per layer. σ_l = √(λ_min(M_l)/K)/(σ0·C) follows the clean
// losses and layer inputs, which grow as the model drifts; a σ_l many times its starting value
// smooths the loss so much that the likelihood-ratio estimate no longer follows its gradient.
// A fixed σ_l (Config.Sigma, optimizer.dp_ulr.controller fixed) cannot run away.
const RunawayFactor = 10

// Optimizer is differentially private forward learning by unified likelihood ratios (Feng et al.,
// "Forward Learning with Differential Privacy", Algorithm 1): per layer l, noise z ~ N(0, σ_l²I) on the pre-activation output, K noisy forward
// passes, and the per-example estimate g_l(d) = Ã_dᵀ S_d with S_d = (1/(Kσ_l²)) Σ_k Loss_k z_k
// (Eq. 4 averaged over K copies; dense: s_d ã_dᵀ, conv: S_d P̃_d); the estimates are clipped to C
// jointly over all layers (one mechanism of sensitivity C per step, as Theorem 3.6 counts),
// summed, privatised and divided by the constant N_B (as Algorithm 1 does), then the update rule runs. σ_l comes from the privacy controller (Eq. 7,
// ControlLayer).
type Optimizer struct {
	cfg   Config
	noise *optim.Noise
	grad  []float32
	k     int
	// first is each layer's first controller σ_l, warned whether its runaway was reported.
	first  []float64
	warned []bool
}

// New returns a DP-ULR optimizer drawing all its randomness from noise.
func New(cfg Config, noise *optim.Noise) (*Optimizer, error) {
	if noise == nil {
		return nil, errors.New("dpulr: DP-ULR needs a noise source: use NewNoise()")
	}
	if !(cfg.NoiseMultiplier > 0) || math.IsInf(cfg.NoiseMultiplier, 0) || !(cfg.ClipNorm > 0) || math.IsInf(cfg.ClipNorm, 0) {
		return nil, fmt.Errorf("dpulr: DP-ULR needs noise_multiplier σ0 > 0 and a finite clip_norm > 0, got %v and %v", cfg.NoiseMultiplier, cfg.ClipNorm)
	}
	if cfg.Copies < 1 {
		return nil, fmt.Errorf("dpulr: DP-ULR needs copies K ≥ 1, got %d", cfg.Copies)
	}
	if !(cfg.Sigma >= 0) || math.IsInf(cfg.Sigma, 0) {
		return nil, fmt.Errorf("dpulr: DP-ULR's injected noise σ_l = %v must be finite and positive (0: the paper's controller)", cfg.Sigma)
	}
	if cfg.Certified && cfg.Sigma == 0 {
		// The controller's σ_l is a function of the whole batch: one example would move every
		// other example's estimate, and the clipped sum would not be C-sensitive.
		return nil, errors.New("dpulr: certified DP-ULR needs a public injected noise σ_l (Config.Sigma, optimizer.dp_ulr.sigma): the controller's σ_l depends on the whole batch, so the clipped sum would not have sensitivity C")
	}
	if cfg.Schedule == nil {
		return nil, errors.New("dpulr: DP-ULR needs a learning-rate schedule")
	}
	if cfg.Rule == nil {
		cfg.Rule = &optim.SGD{}
	}
	return &Optimizer{cfg: cfg, noise: noise}, nil
}

// PerExampleRandomness marks a step that draws randomness for each example in batch order
// (the forward perturbations z): a test that couples two neighbouring batches through the same
// seeded stream keeps the other examples' draws aligned only when the changed example is
// replaced, or removed from the end.
func (o *Optimizer) PerExampleRandomness() {}

// UpdateRule returns the name of the configured update rule.
func (o *Optimizer) UpdateRule() string { return o.cfg.Rule.Name() }

// Stateful reports whether the update rule carries state across steps.
func (o *Optimizer) Stateful() bool { return o.cfg.Rule.Stateful() }

// Steps returns the number of steps taken.
func (o *Optimizer) Steps() int { return o.k }

// Declare implements optim.Declarer.
func (o *Optimizer) Declare(info data.BatchInfo) ([]accounting.Step, error) {
	return o.DeclareStep(o.k, info)
}

// DeclareStep implements optim.StepDeclarer.
func (o *Optimizer) DeclareStep(k int, info data.BatchInfo) ([]accounting.Step, error) {
	p, err := o.plan(info, optim.DeclaredBatch(info))
	if err != nil {
		return nil, err
	}
	lr := o.cfg.Schedule.StepSize(k)
	if err := optim.CheckStepSize(lr, k); err != nil {
		return nil, err
	}
	return []accounting.Step{o.record(p, lr)}, nil
}

// plan accepts Poisson sampling with rejection only: Theorem 3.6 and the N_B normaliser need it.
func (o *Optimizer) plan(info data.BatchInfo, b data.Batch) (optim.BatchPlan, error) {
	if sc := accounting.Sampling(info.Scheme()); sc != accounting.PoissonWithRejection {
		return optim.BatchPlan{}, fmt.Errorf("dpulr: DP-ULR needs optimizer.sampling: poisson-with-rejection with optimizer.min_batch_size (Feng et al., Theorem 3.6), got %q", sc)
	}
	return optim.PlanBatch(info, b)
}

// record declares one step: sensitivity C, noise std σ0·C in every direction of the sum.
func (o *Optimizer) record(p optim.BatchPlan, lr float64) accounting.Step {
	c := o.cfg.ClipNorm
	rec := p.Record(c, o.cfg.NoiseMultiplier*c, lr)
	if !o.cfg.Certified {
		rec.Mechanism = accounting.SampledWithRejectionGaussian
	}
	return rec
}

// Step takes one DP-ULR step. m must be a ForwardOracle.
func (o *Optimizer) Step(m optim.GradientOracle, b data.Batch, info data.BatchInfo) (optim.Result, error) {
	fo, ok := m.(ForwardOracle)
	if !ok {
		return optim.Result{}, errors.New("dpulr: DP-ULR needs a model with forward-only access (models.Network)")
	}
	p, err := o.plan(info, b)
	if err != nil {
		return optim.Result{}, err
	}
	lr := o.cfg.Schedule.StepSize(o.k)
	if err := optim.CheckStepSize(lr, o.k); err != nil {
		return optim.Result{}, err
	}
	params := fo.Params()
	if err := optim.CheckRuleLen(o.cfg.Rule, len(params)); err != nil {
		return optim.Result{}, err
	}
	o.grad = optim.Resize(o.grad, len(params))
	st, err := o.privateSum(fo, b)
	if err != nil {
		return optim.Result{}, fmt.Errorf("dpulr: DP-ULR step %d: %w", o.k+1, err)
	}
	if o.cfg.Certified {
		o.noise.AddGaussian(o.grad, o.cfg.NoiseMultiplier*o.cfg.ClipNorm)
	}
	// Divide by the constant N_B (Normaliser), never the realised batch size.
	if err := optim.ScaleFinite(o.grad, 1/p.Norm); err != nil {
		return optim.Result{}, fmt.Errorf("dpulr: DP-ULR step %d: %w", o.k+1, err)
	}
	o.cfg.Rule.Apply(params, o.grad, lr)
	o.k++
	return optim.Result{Records: []accounting.Step{o.record(p, lr)}, Stats: st, StepSize: lr}, nil
}

// layerState is one layer's state within a step.
type layerState struct {
	info  layer.Linear
	ctl   LayerNoise
	s     []float32 // S: (N·Rows)×Out, the likelihood-ratio output gradients
	width int       // In (+1 with a bias): the augmented input ã
}

// privateSum writes into o.grad the jointly clipped sum of the likelihood-ratio estimates, plus
// the top-up noise in paper mode.
func (o *Optimizer) privateSum(m ForwardOracle, b data.Batch) (data.Stats, error) {
	var st data.Stats
	if b.N == 0 {
		return st, nil
	}
	tr, layers, err := o.estimates(m, b)
	if err != nil {
		return st, err
	}
	for _, l := range tr.Loss {
		if !math.IsNaN(l) && !math.IsInf(l, 0) { // monitoring only
			st.Loss += l
		}
	}
	st.N = b.N
	if st.Clipped, err = o.clippedSum(tr, layers, b.N, &st.NonFinite); err != nil {
		return st, err
	}
	if !o.cfg.Certified {
		for _, l := range layers {
			o.addTopUp(l)
		}
	}
	return st, nil
}

// estimates runs the clean pass, the privacy controller (Eq. 7) per layer and the noisy passes,
// and returns the trace with every layer's per-example likelihood-ratio output gradients S:
// example d's estimate for layer l is Ã_dᵀ S_d (dense: s_d ã_dᵀ; conv: S_d P̃_d).
func (o *Optimizer) estimates(m ForwardOracle, b data.Batch) (layer.Trace, []layerState, error) {
	tr, err := m.Trace(b)
	if err != nil {
		return tr, nil, err
	}
	lin := m.LinearLayers()
	layers := make([]layerState, len(lin))
	for i, l := range lin {
		g := l.Geometry
		w := g.In
		if g.Bias {
			w++
		}
		rows := b.N * g.Rows
		layers[i] = layerState{info: l, ctl: LayerNoise{Sigma: o.cfg.Sigma, sigmaOnly: true}, s: make([]float32, rows*g.Out), width: w}
		if o.cfg.Certified {
			continue // a public σ_l: nothing is computed from the batch
		}
		a := mat.NewDense(rows, w, nil)
		l0 := make([]float64, rows)
		for r := 0; r < rows; r++ {
			row := a.RawRowView(r)
			for j, v := range tr.Inputs[i][r*g.In : (r+1)*g.In] {
				row[j] = float64(v)
			}
			if g.Bias {
				row[g.In] = 1
			}
			l0[r] = tr.Loss[r/g.Rows]
			if !finiteRow(row) || math.IsNaN(l0[r]) || math.IsInf(l0[r], 0) {
				// A non-finite example contributes zero (clippedSum), here as well.
				clear(row)
				l0[r] = 0
			}
		}
		floor, cap := o.cfg.SigmaFloor, o.cfg.SigmaCap
		if o.cfg.Sigma > 0 {
			floor, cap = o.cfg.Sigma, o.cfg.Sigma // the top-up for the fixed σ_l
		}
		ctl, err := ControlLayer(a, l0, Control{Copies: o.cfg.Copies, ClipNorm: o.cfg.ClipNorm,
			NoiseMultiplier: o.cfg.NoiseMultiplier, SigmaFloor: floor, SigmaCap: cap})
		if err != nil {
			return tr, nil, fmt.Errorf("layer %s: %w", l.Name, err)
		}
		layers[i].ctl = ctl
		if o.cfg.Sigma == 0 {
			o.watchSigma(i, l.Name, ctl.Sigma)
		}
	}
	if err := o.estimate(m, b, tr, layers); err != nil {
		return tr, nil, err
	}
	return tr, layers, nil
}

// watchSigma warns, once per layer, when the controller's σ_l exceeds RunawayFactor times its
// first value. σ_l is computed from the batch: the warning is for the operator only.
func (o *Optimizer) watchSigma(layer int, name string, sigma float64) {
	if len(o.first) <= layer {
		o.first = append(o.first, make([]float64, layer+1-len(o.first))...)
		o.warned = append(o.warned, make([]bool, layer+1-len(o.warned))...)
	}
	if o.first[layer] == 0 {
		o.first[layer] = sigma
		return
	}
	if o.warned[layer] || !(sigma > RunawayFactor*o.first[layer]) {
		return
	}
	o.warned[layer] = true
	if o.cfg.Warnf != nil {
		o.cfg.Warnf("dp-ulr: layer %s: the Eq. 7 controller's injected noise σ_l = %.3g at step %d is more than %d× its first value %.3g: a large σ_l smooths the loss until the likelihood-ratio estimate no longer follows its gradient, and accuracy usually falls; a fixed σ_l (optimizer.dp_ulr.controller: fixed, sigma: 1) does not run away",
			name, sigma, o.k+1, RunawayFactor, o.first[layer])
	}
}

// SigmaRanAway reports whether the controller's σ_l of layer i has exceeded RunawayFactor times
// its first value (operator-only).
func (o *Optimizer) SigmaRanAway(i int) bool { return i < len(o.warned) && o.warned[i] }

// clippedSum adds to o.grad Σ_d min(1, C/‖g(d)‖)·g(d), where g(d) is example d's estimate over
// all layers jointly (so that Theorem 3.6's T-step accounting holds), with the shared ghost-clipping kernels, and returns how
// many examples were clipped. An example whose estimate has a non-finite norm contributes zero
// and is counted in nonFinite (operator-only). The layers' S are scaled in place.
func (o *Optimizer) clippedSum(tr layer.Trace, layers []layerState, n int, nonFinite *int) (int, error) {
	sq := make([]float64, n)
	var (
		buf     []float32
		err     error
		clipped int
	)
	for i, l := range layers {
		if buf, err = kernels.SquaredNorms(sq, tr.Inputs[i], l.s, l.info.Geometry, buf); err != nil {
			return 0, err
		}
	}
	scale := make([]float32, n)
	for d, v := range sq {
		if math.IsNaN(v) || math.IsInf(v, 0) {
			// A total per-example function: a non-finite estimate (a non-finite input or
			// loss) is clipped to zero. Its rows are cleared, since 0·NaN is NaN.
			for i, l := range layers {
				g := l.info.Geometry
				clear(l.s[d*g.Rows*g.Out : (d+1)*g.Rows*g.Out])
				clear(tr.Inputs[i][d*g.Rows*g.In : (d+1)*g.Rows*g.In])
			}
			*nonFinite++
			continue
		}
		nrm := math.Sqrt(v)
		scale[d] = kernels.ClipFactor(o.cfg.ClipNorm, nrm)
		if nrm > o.cfg.ClipNorm {
			clipped++
		}
	}
	for i, l := range layers {
		var gb []float32
		if l.info.Bias >= 0 {
			gb = o.grad[l.info.Bias : l.info.Bias+l.info.Geometry.Out]
		}
		g := l.info.Geometry
		if buf, err = kernels.ScaledSum(o.grad[l.info.Weight:l.info.Weight+g.In*g.Out], gb, tr.Inputs[i], l.s, scale, g, buf); err != nil {
			return 0, err
		}
	}
	return clipped, nil
}

// estimate fills every layer's S = (1/(Kσ_l²)) Σ_k Loss_k z_k (Eq. 4 averaged over K copies).
// One layer at a time (Algorithm 1), each noisy pass resumes from the layer's clean output in
// tr: the layers before it are reused from the clean pass, not recomputed.
func (o *Optimizer) estimate(m ForwardOracle, b data.Batch, tr layer.Trace, layers []layerState) error {
	noise := make([][]float32, len(layers))
	loss := make([]float64, b.N)
	pass := func(active []int) error {
		for _, i := range active {
			// Each pass draws from a stream of its own, split off at a fixed cost; a draw's
			// prefix does not depend on its length, so an example's perturbations do not
			// depend on how many examples follow it in the batch.
			clear(noise[i])
			o.noise.Split().AddGaussian(noise[i], layers[i].ctl.Sigma)
		}
		var err error
		if len(active) == 1 {
			err = m.PerturbedLossesFrom(b, tr, active[0], noise[active[0]], loss)
		} else {
			err = m.PerturbedLosses(b, noise, loss)
		}
		if err != nil {
			return err
		}
		for _, i := range active {
			l := &layers[i]
			per := l.info.Geometry.Rows * l.info.Geometry.Out
			c := 1 / (float64(o.cfg.Copies) * l.ctl.Sigma * l.ctl.Sigma)
			for d := 0; d < b.N; d++ {
				f := float32(c * loss[d])
				z, s := noise[i][d*per:(d+1)*per], l.s[d*per:(d+1)*per]
				for j, v := range z {
					s[j] += f * v
				}
			}
		}
		return nil
	}
	if o.cfg.AllLayers {
		all := make([]int, len(layers))
		for i := range layers {
			all[i] = i
			noise[i] = make([]float32, len(layers[i].s))
		}
		for range o.cfg.Copies {
			if err := pass(all); err != nil {
				return err
			}
		}
		return nil
	}
	for i := range layers {
		noise[i] = make([]float32, len(layers[i].s))
		for range o.cfg.Copies {
			if err := pass([]int{i}); err != nil {
				return err
			}
		}
		noise[i] = nil
	}
	return nil
}

// addTopUp adds the layer's eigen-direction remediation noise (Feng et al., Section 3.2, an Out×width matrix on
// Θᵀ = [W; b]ᵀ) to the weight (In×Out) and bias parts of o.grad.
func (o *Optimizer) addTopUp(l layerState) {
	g := l.info.Geometry
	e := l.ctl.TopUp(g.Out, o.noise.Rand())
	for c := 0; c < g.Out; c++ {
		for r := 0; r < g.In; r++ {
			o.grad[l.info.Weight+r*g.Out+c] += float32(e.At(c, r))
		}
		if g.Bias {
			o.grad[l.info.Bias+c] += float32(e.At(c, g.In))
		}
	}
}

// State implements optim.Checkpointer: "steps" and the update rule's state, as DP-SGD.
func (o *Optimizer) State() (map[string][]float32, map[string]float64) {
	vecs, sc := map[string][]float32{}, map[string]float64{optim.StateSteps: float64(o.k)}
	optim.RuleState(o.cfg.Rule, vecs, sc)
	return vecs, sc
}

// Restore implements optim.Checkpointer.
func (o *Optimizer) Restore(vecs map[string][]float32, sc map[string]float64) error {
	k, err := optim.RestoreRuleSteps("DP-ULR with update rule "+o.cfg.Rule.Name(), o.cfg.Rule, vecs, sc)
	if err != nil {
		return err
	}
	o.k = k
	return nil
}

// finiteRow reports whether every element of x is finite.
func finiteRow(x []float64) bool {
	var chk float64 // stays 0 unless some v is NaN or infinite (v−v is then NaN)
	for _, v := range x {
		chk += v - v
	}
	return chk == 0
}

// NoiseStream implements optim.NoiseDrawer: the stream the optimizer was built with.
func (o *Optimizer) NoiseStream() *optim.Noise { return o.noise }
