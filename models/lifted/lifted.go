package lifted

import (
	"errors"
	"fmt"
	"math"

	"gonum.org/v1/gonum/blas"
	"gonum.org/v1/gonum/blas/blas64"
	"gonum.org/v1/gonum/mat"

	"github.com/dptrain/dptrain/data"
	"github.com/dptrain/dptrain/internal/kernels"
)

// Config describes a lifted MLP.
type Config struct {
	// Sizes are the widths n_0 (input), n_1..n_D (hidden), n_{D+1} (outputs): D+1 released
	// weight blocks, block d of shape n_d×n_{d+1}.
	Sizes []int
	// ActivationClip holds ρ_0..ρ_D of the activation-norm clip (Eq. 12), one per block input,
	// each > 0 (+Inf: no clip). Block d's loss is then ρ_d²-smooth (Lemma B.1, γ = 1).
	ActivationClip []float64
	// DatasetSize is n: the auxiliaries are kept for dataset indices 0..n−1.
	DatasetSize int
	// Recompute re-derives the auxiliaries by a forward pass at every visit instead of
	// keeping them across epochs (the paper keeps them but never says how they start; recomputing is the memory-light option).
	Recompute bool
}

// MLP is a lifted ReLU MLP's hidden state: the per-example auxiliaries of Eq. (4). The
// released weights are not part of it: every method takes them as views (see the package
// documentation for their layout).
type MLP struct {
	cfg  Config
	per  int   // floats kept per example
	uOff []int // offset of u_d, d = 0..D−1, within an example's slot
	xOff []int // offset of x_d, d = 1..D (xOff[0] unused)
	aux  []float32
	seen []bool
}

// New checks cfg and returns a lifted MLP with no example visited yet.
func New(cfg Config) (*MLP, error) {
	if len(cfg.Sizes) < 2 {
		return nil, fmt.Errorf("lifted: %d layer sizes: give the input, hidden and output widths (at least 2)", len(cfg.Sizes))
	}
	for i, s := range cfg.Sizes {
		if s <= 0 {
			return nil, fmt.Errorf("lifted: layer size %d is %d: widths must be positive", i, s)
		}
	}
	blocks := len(cfg.Sizes) - 1
	if len(cfg.ActivationClip) != blocks {
		return nil, fmt.Errorf("lifted: %d activation clips for %d weight blocks: give one ρ_d per block input (Eq. 12)", len(cfg.ActivationClip), blocks)
	}
	for d, r := range cfg.ActivationClip {
		if !(r > 0) {
			return nil, fmt.Errorf("lifted: activation clip ρ_%d = %v: want > 0 (+Inf for none)", d, r)
		}
	}
	if cfg.DatasetSize <= 0 {
		return nil, fmt.Errorf("lifted: dataset size %d: want n > 0", cfg.DatasetSize)
	}
	cfg.Sizes = append([]int(nil), cfg.Sizes...)
	cfg.ActivationClip = append([]float64(nil), cfg.ActivationClip...)
	m := &MLP{cfg: cfg, uOff: make([]int, blocks-1), xOff: make([]int, blocks)}
	for d := 0; d < blocks-1; d++ {
		m.uOff[d] = m.per
		m.per += cfg.Sizes[d+1]
	}
	for d := 1; d < blocks; d++ {
		m.xOff[d] = m.per
		m.per += cfg.Sizes[d]
	}
	return m, nil
}

// Blocks returns D+1, the number of released weight blocks.
func (m *MLP) Blocks() int { return len(m.cfg.Sizes) - 1 }

// Shape returns block d's input and output widths n_d, n_{d+1}.
func (m *MLP) Shape(d int) (in, out int) { return m.cfg.Sizes[d], m.cfg.Sizes[d+1] }

// Smoothness returns β_d = γρ_d² (γ = 1), the smoothness of block d's loss
// ½·mean_i‖t_{d,i} − W_d x_{d,i}‖² once the inputs are clipped to ρ_d (Lemma B.1, Eq. 13).
func (m *MLP) Smoothness(d int) float64 { r := m.cfg.ActivationClip[d]; return r * r }

// Recompute reports whether the auxiliaries are re-derived at every visit.
func (m *MLP) Recompute() bool { return m.cfg.Recompute }

// Problems are a batch's released-block sub-problems after the hidden updates: block d
// minimises ½·mean_i‖t_{d,i} − W_d x_{d,i}‖² with inputs In[d] (N×n_d) and targets Target[d]
// (N×n_{d+1}), row-major, t_d = u_d below the top and t_D = y one-hot.
type Problems struct {
	N      int
	In     [][]float32
	Target [][]float32
}

// checkWeights returns an error unless w holds the D+1 blocks of the configured shapes.
func (m *MLP) checkWeights(w [][]float32) error {
	if len(w) != m.Blocks() {
		return fmt.Errorf("lifted: %d weight blocks, want %d", len(w), m.Blocks())
	}
	for d := range w {
		in, out := m.Shape(d)
		if len(w[d]) != in*out {
			return fmt.Errorf("lifted: weight block %d has %d values, want %d×%d", d, len(w[d]), in, out)
		}
	}
	return nil
}

// state is a batch's auxiliaries in float64: x[d] (N×n_d, d = 0..D) and u[d] (N×n_{d+1},
// d = 0..D−1).
type state struct {
	x, u []*mat.Dense
}

func dense(w []float32, r, c int) *mat.Dense {
	v := make([]float64, len(w))
	for i, f := range w {
		v[i] = float64(f)
	}
	return mat.NewDense(r, c, v)
}

// clipRows scales each row of x to l2 norm ≤ rho (Eq. 12).
func clipRows(x *mat.Dense, rho float64) {
	if math.IsInf(rho, 1) {
		return
	}
	r, _ := x.Dims()
	for i := 0; i < r; i++ {
		row := x.RawRowView(i)
		var s float64
		for _, v := range row {
			s += v * v
		}
		if n := math.Sqrt(s); n > rho {
			f := rho / n
			for j := range row {
				row[j] *= f
			}
		}
	}
}

// mulRows sets row i of dst (r×m) to x_i W for every row i of x (r×n) with need nil or need[i]
// set, W n×m, by one matrix-vector product per row. These rows are per-example values (an
// example's u_d, or what its x- and u-updates start from): one GEMM over the batch would give a
// row with arithmetic that depends on its offset in the batch (OpenBLAS's kernels take
// different paths for different row offsets), so an example's auxiliaries would depend on its
// slot and neighbours. A product of fixed shape per row is the same at every slot.
func mulRows(dst, x, w *mat.Dense, need []bool) {
	r, n := x.Dims()
	_, m := w.Dims()
	wr := w.RawMatrix()
	for i := 0; i < r; i++ {
		if need != nil && !need[i] {
			continue
		}
		blas64.Gemv(blas.Trans, 1, wr, blas64.Vector{N: n, Inc: 1, Data: x.RawRowView(i)},
			0, blas64.Vector{N: m, Inc: 1, Data: dst.RawRowView(i)})
	}
}

func relu(dst, src *mat.Dense) {
	dst.Apply(func(_, _ int, v float64) float64 { return math.Max(v, 0) }, src)
}

// load returns the batch's auxiliaries: a forward pass for examples not visited yet (or
// always, with Recompute), the kept values otherwise. x_0 is the input clipped to ρ_0.
func (m *MLP) load(w []*mat.Dense, b data.Batch) (state, error) {
	D := m.Blocks() - 1
	n0 := m.cfg.Sizes[0]
	if b.N <= 0 || len(b.X) < b.N*n0 || len(b.Y) < b.N {
		return state{}, fmt.Errorf("lifted: batch of %d examples with %d inputs and %d labels (width %d)", b.N, len(b.X), len(b.Y), n0)
	}
	if !m.cfg.Recompute && len(b.Index) < b.N {
		return state{}, errors.New("lifted: the batch has no dataset indices (models.Batch.Index): the kept auxiliaries are per example; use a sampler that sets them, or recompute")
	}
	s := state{x: make([]*mat.Dense, D+1), u: make([]*mat.Dense, D)}
	s.x[0] = dense(b.X[:b.N*n0], b.N, n0)
	clipRows(s.x[0], m.cfg.ActivationClip[0])
	fresh := make([]bool, b.N) // the examples that take the forward pass
	anyFresh := false
	for i := 0; i < b.N; i++ {
		if !m.cfg.Recompute {
			idx := b.Index[i]
			if idx < 0 || idx >= m.cfg.DatasetSize {
				return state{}, fmt.Errorf("lifted: dataset index %d outside [0, %d)", idx, m.cfg.DatasetSize)
			}
			fresh[i] = m.aux == nil || !m.seen[idx]
		} else {
			fresh[i] = true
		}
		anyFresh = anyFresh || fresh[i]
	}
	for d := 0; d < D; d++ { // forward pass: u_d = x_d W_d, x_{d+1} = relu(u_d)
		s.u[d] = mat.NewDense(b.N, m.cfg.Sizes[d+1], nil)
		s.x[d+1] = mat.NewDense(b.N, m.cfg.Sizes[d+1], nil)
		if anyFresh { // needed for the examples not visited yet
			mulRows(s.u[d], s.x[d], w[d], fresh)
			relu(s.x[d+1], s.u[d])
		}
	}
	if m.cfg.Recompute || m.aux == nil {
		return s, nil
	}
	for i := 0; i < b.N; i++ {
		idx := b.Index[i]
		if !m.seen[idx] {
			continue
		}
		slot := m.aux[idx*m.per : (idx+1)*m.per]
		for d := 0; d < D; d++ {
			copyRow(s.u[d].RawRowView(i), slot[m.uOff[d]:])
			copyRow(s.x[d+1].RawRowView(i), slot[m.xOff[d+1]:])
		}
	}
	return s, nil
}

func copyRow(dst []float64, src []float32) {
	for j := range dst {
		dst[j] = float64(src[j])
	}
}

// store keeps the batch's auxiliaries for its examples (nothing with Recompute).
func (m *MLP) store(s state, b data.Batch) {
	if m.cfg.Recompute {
		return
	}
	if m.aux == nil {
		m.aux = make([]float32, m.cfg.DatasetSize*m.per)
		m.seen = make([]bool, m.cfg.DatasetSize)
	}
	for i := 0; i < b.N; i++ {
		idx := b.Index[i]
		slot := m.aux[idx*m.per : (idx+1)*m.per]
		for d := 0; d < len(s.u); d++ {
			for j, v := range s.u[d].RawRowView(i) {
				slot[m.uOff[d]+j] = float32(v)
			}
			for j, v := range s.x[d+1].RawRowView(i) {
				slot[m.xOff[d+1]+j] = float32(v)
			}
		}
		m.seen[idx] = true
	}
}

func oneHot(y []int32, n, classes int) (*mat.Dense, error) {
	t := mat.NewDense(n, classes, nil)
	for i := 0; i < n; i++ {
		if y[i] < 0 || int(y[i]) >= classes {
			return nil, fmt.Errorf("lifted: label %d outside the %d outputs", y[i], classes)
		}
		t.Set(i, int(y[i]), 1)
	}
	return t, nil
}

// XUpdate is the x-update of Chen & Liu's Eq. (11) (the last layer as the MSE ridge solution) for one layer:
// the rows of the result minimise ½‖x − r‖² + ½‖x W − t‖² (row form of
// ½‖x − relu(u_{d−1})‖² + ½‖t − W_d x‖²), i.e. x = (r + t Wᵀ)(I + W Wᵀ)⁻¹, with r = relu(u_{d−1})
// and t = u_d (or y for the MSE top layer). W is n_d×n_{d+1}; the n_d×n_d SPD matrix I + W Wᵀ
// is inverted once by Cholesky.
//
// Each row is an example's x_d: its right-hand side r_i + W t_iᵀ and its product with the
// inverse are done one row at a time (a gemv and a symv of fixed shape per row), not as one
// GEMM and one multi-column solve over the batch, whose arithmetic for a row would depend on
// its offset in the batch under OpenBLAS, and so on the example's slot and neighbours. (Two
// triangular solves per row would do too, at two to four times the cost of the symv.)
func XUpdate(r, t, w *mat.Dense) (*mat.Dense, error) {
	nd, no := w.Dims()
	var sys mat.SymDense
	sys.SymOuterK(1, w) // W Wᵀ
	for i := 0; i < nd; i++ {
		sys.SetSym(i, i, sys.At(i, i)+1)
	}
	var chol mat.Cholesky
	if !chol.Factorize(&sys) {
		return nil, errors.New("lifted: I + W Wᵀ is not positive definite (non-finite weights?)")
	}
	var inv mat.SymDense
	if err := chol.InverseTo(&inv); err != nil {
		return nil, fmt.Errorf("lifted: x-update solve: %w", err)
	}
	ir := inv.RawSymmetric()
	n, _ := r.Dims()
	x := mat.NewDense(n, nd, nil)
	wr := w.RawMatrix()
	rhs := blas64.Vector{N: nd, Inc: 1, Data: make([]float64, nd)}
	for i := 0; i < n; i++ {
		// No value of the previous row's, should a BLAS read y at β = 0.
		clear(rhs.Data)
		blas64.Gemv(blas.NoTrans, 1, wr, blas64.Vector{N: no, Inc: 1, Data: t.RawRowView(i)}, 0, rhs) // W t_iᵀ
		for j, v := range r.RawRowView(i) {
			rhs.Data[j] += v
		}
		blas64.Symv(1, ir, rhs, 0, blas64.Vector{N: nd, Inc: 1, Data: x.RawRowView(i)}) // x_iᵀ = (I + W Wᵀ)⁻¹(r_iᵀ + W t_iᵀ)
	}
	return x, nil
}

// UUpdate is the closed-form u-update of Eq. (10) (Zeng et al. 2019, Lemma 13) for one
// coordinate: the minimiser of ½(z − relu(u))² + ½(u − a)², with a = (W_d x_d) and z = x_{d+1}.
func UUpdate(a, z float64) float64 {
	switch {
	case -z <= a && a <= -(math.Sqrt2-1)*z && z >= 0:
		return a
	case a+z <= 0:
		return math.Min(0, a)
	}
	return (a + z) / 2
}

// weights converts the weight views to float64 matrices.
func (m *MLP) weights(w [][]float32) ([]*mat.Dense, error) {
	if err := m.checkWeights(w); err != nil {
		return nil, err
	}
	out := make([]*mat.Dense, len(w))
	for d := range w {
		in, o := m.Shape(d)
		out[d] = dense(w[d], in, o)
	}
	return out, nil
}

func finite(x *mat.Dense, what string, d int) error {
	for _, v := range x.RawMatrix().Data {
		if math.IsNaN(v) || math.IsInf(v, 0) {
			return fmt.Errorf("lifted: non-finite %s_%d (lower optimizer.learning_rate, or check the inputs)", what, d)
		}
	}
	return nil
}

// Update runs the hidden-block updates of Algorithm 4 on batch b at weights w: every x_d by
// Eq. (11) then its clip (Eq. 12), then every u_d by Eq. (10); it keeps the new auxiliaries
// for the batch's examples and returns the released blocks' sub-problems. The x_d depend on
// u and W only and the u_d on x and W only, so the order over d does not matter.
func (m *MLP) Update(w [][]float32, b data.Batch) (*Problems, error) {
	ws, err := m.weights(w)
	if err != nil {
		return nil, err
	}
	s, err := m.load(ws, b)
	if err != nil {
		return nil, err
	}
	D := m.Blocks() - 1
	y, err := oneHot(b.Y, b.N, m.cfg.Sizes[D+1])
	if err != nil {
		return nil, err
	}
	for d := 1; d <= D; d++ { // Eq. (11), then Eq. (12)
		t := y
		if d < D {
			t = s.u[d]
		}
		var r mat.Dense
		relu(&r, s.u[d-1])
		x, err := XUpdate(&r, t, ws[d])
		if err != nil {
			return nil, err
		}
		clipRows(x, m.cfg.ActivationClip[d])
		if err := finite(x, "x", d); err != nil {
			return nil, err
		}
		s.x[d] = x
	}
	for d := 0; d < D; d++ { // Eq. (10)
		_, o := m.Shape(d)
		a := mat.NewDense(b.N, o, nil)
		mulRows(a, s.x[d], ws[d], nil) // per example: see mulRows
		z := s.x[d+1]
		s.u[d].Apply(func(i, j int, v float64) float64 { return UUpdate(v, z.At(i, j)) }, a)
		if err := finite(s.u[d], "u", d); err != nil {
			return nil, err
		}
	}
	m.store(s, b)
	p := &Problems{N: b.N, In: make([][]float32, D+1), Target: make([]([]float32), D+1)}
	for d := 0; d <= D; d++ {
		p.In[d] = f32(s.x[d])
		if d < D {
			p.Target[d] = f32(s.u[d])
		} else {
			p.Target[d] = f32(y)
		}
	}
	return p, nil
}

func f32(x *mat.Dense) []float32 {
	raw := x.RawMatrix()
	out := make([]float32, 0, raw.Rows*raw.Cols)
	for i := 0; i < raw.Rows; i++ {
		for _, v := range raw.Data[i*raw.Stride : i*raw.Stride+raw.Cols] {
			out = append(out, float32(v))
		}
	}
	return out
}

// Objective returns Σ_i F_i over batch b, F of Eq. (4) with γ = 1 and no regulariser, at
// weights w and the batch's current auxiliaries (a forward pass for examples not visited yet,
// which is not kept).
func (m *MLP) Objective(w [][]float32, b data.Batch) (float64, error) {
	ws, err := m.weights(w)
	if err != nil {
		return 0, err
	}
	s, err := m.load(ws, b)
	if err != nil {
		return 0, err
	}
	D := m.Blocks() - 1
	y, err := oneHot(b.Y, b.N, m.cfg.Sizes[D+1])
	if err != nil {
		return 0, err
	}
	sq := func(a, c mat.Matrix) float64 {
		var diff mat.Dense
		diff.Sub(a, c)
		f := mat.Norm(&diff, 2)
		return f * f / 2
	}
	var xw mat.Dense
	xw.Mul(s.x[D], ws[D])
	f := sq(&xw, y)
	for d := 0; d < D; d++ {
		var r, a mat.Dense
		relu(&r, s.u[d])
		a.Mul(s.x[d], ws[d])
		f += sq(s.x[d+1], &r) + sq(s.u[d], &a)
	}
	return f, nil
}

// State returns the kept auxiliaries (n slots of u_0..u_{D−1}, x_1..x_D, float32) and which
// examples have been visited; nil before the first visit or with Recompute. The slices alias
// the model's storage: copy or write them out before the next Update.
func (m *MLP) State() (aux []float32, seen []bool) { return m.aux, m.seen }

// Restore replaces the kept auxiliaries with a copy of aux and seen as State returned them
// (nil, nil: nothing visited). It changes nothing when their sizes do not fit the model.
func (m *MLP) Restore(aux []float32, seen []bool) error {
	if aux == nil && seen == nil {
		m.aux, m.seen = nil, nil
		return nil
	}
	if m.cfg.Recompute || len(seen) != m.cfg.DatasetSize || len(aux) != m.cfg.DatasetSize*m.per {
		return fmt.Errorf("lifted: restored state of %d auxiliaries for %d examples does not fit %d examples of %d floats (recompute %v)", len(aux), len(seen), m.cfg.DatasetSize, m.per, m.cfg.Recompute)
	}
	m.aux, m.seen = append([]float32(nil), aux...), append([]bool(nil), seen...)
	return nil
}

// BlockGradient writes into gw the clipped sum of one block's per-example gradients and
// returns how many were clipped (kernels.BlockGradient).
func BlockGradient(gw, w, in, target []float32, n, nIn, nOut int, clip float64, buf []float32) (int, []float32, error) {
	return kernels.BlockGradient(gw, w, in, target, n, nIn, nOut, clip, buf)
}

// ClippedBlockGradient is BlockGradient returning the counts as models.Stats
// (kernels.ClippedBlockGradient).
func ClippedBlockGradient(gw, w, in, target []float32, n, nIn, nOut int, clip float64, buf []float32) (data.Stats, []float32, error) {
	return kernels.ClippedBlockGradient(gw, w, in, target, n, nIn, nOut, clip, buf)
}

// ProximalSolve replaces w by (I + c·XᵀX)⁻¹ w, the implicit W-update (kernels.ProximalSolve).
func ProximalSolve(w, in []float32, n, nIn, nOut int, c float64) error {
	return kernels.ProximalSolve(w, in, n, nIn, nOut, c)
}
