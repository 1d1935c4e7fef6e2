package steptest

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/dptrain/dptrain/data"
	"github.com/dptrain/dptrain/models"
	"github.com/dptrain/dptrain/models/graph"
	"github.com/dptrain/dptrain/optim"
	"gonum.org/v1/gonum/stat/distuv"
)

// Test-only models implementing GradientOracle in plain Go, each written independently of the
// code under test (their clipping does not call ClipL2).

// Table's per-sample gradient is the example's feature row itself: g_i = X[i·d:(i+1)·d],
// independent of the parameters, so the expected sums are easy to compute by hand.
type Table struct {
	Theta []float32
	Calls int
}

func (m *Table) Params() []float32 { return m.Theta }

func (m *Table) rows(b data.Batch) ([][]float32, error) {
	d := len(m.Theta)
	if len(b.X) != b.N*d {
		return nil, fmt.Errorf("Table: %d values for %d rows of %d", len(b.X), b.N, d)
	}
	r := make([][]float32, b.N)
	for i := range r {
		r[i] = append([]float32(nil), b.X[i*d:(i+1)*d]...)
	}
	return r, nil
}

func (m *Table) ClippedGradSum(b data.Batch, clip float64, grad []float32, norms []float64) (data.Stats, error) {
	m.Calls++
	rows, err := m.rows(b)
	if err != nil {
		return data.Stats{}, err
	}
	sum := make([]float64, len(grad))
	st := data.Stats{N: b.N}
	for i, r := range rows {
		var s float64
		for _, v := range r {
			s += float64(v) * float64(v)
		}
		nrm := math.Sqrt(s)
		if norms != nil {
			norms[i] = nrm
		}
		scale := 1.0
		if nrm > clip {
			scale = clip / nrm
			st.Clipped++
		}
		for j, v := range r {
			sum[j] += scale * float64(v)
		}
	}
	for j := range grad {
		grad[j] = float32(sum[j])
	}
	return st, nil
}

func (m *Table) PerSampleGradSum(b data.Batch, f func(i int, g []float32), grad []float32) (data.Stats, error) {
	m.Calls++
	rows, err := m.rows(b)
	if err != nil {
		return data.Stats{}, err
	}
	sum := make([]float64, len(grad))
	for i, r := range rows {
		f(i, r)
		for j, v := range r {
			sum[j] += float64(v)
		}
	}
	for j := range grad {
		grad[j] = float32(sum[j])
	}
	return data.Stats{N: b.N}, nil
}

// Zero has d parameters and zero gradients for every example, without storing rows.
type Zero struct {
	Theta []float32
	Calls int
}

func (m *Zero) Params() []float32 { return m.Theta }
func (m *Zero) ClippedGradSum(b data.Batch, _ float64, grad []float32, _ []float64) (data.Stats, error) {
	m.Calls++
	clear(grad)
	return data.Stats{N: b.N}, nil
}
func (m *Zero) PerSampleGradSum(b data.Batch, _ func(int, []float32), grad []float32) (data.Stats, error) {
	m.Calls++
	clear(grad)
	return data.Stats{N: b.N}, nil
}

// Softmax is multinomial logistic regression with bias: logits = W·x + b, W stored
// row-major (classes × dim) followed by the classes biases. The per-sample gradient of the
// cross-entropy is (p − e_y) ⊗ (x, 1). MaxFeatureNorm records the largest ‖x‖ it was given.
type Softmax struct {
	dim, classes   int
	Theta          []float32
	MaxFeatureNorm float64
}

func NewSoftmax(dim, classes int) *Softmax {
	return &Softmax{dim: dim, classes: classes, Theta: make([]float32, classes*dim+classes)}
}

func (m *Softmax) Params() []float32 { return m.Theta }

// SampleGrad returns sample i's gradient and loss.
func (m *Softmax) SampleGrad(b data.Batch, i int) ([]float64, float64) {
	x := b.X[i*m.dim : (i+1)*m.dim]
	var xn float64
	for _, v := range x {
		xn += float64(v) * float64(v)
	}
	m.MaxFeatureNorm = math.Max(m.MaxFeatureNorm, math.Sqrt(xn))
	logits := make([]float64, m.classes)
	mx := math.Inf(-1)
	for c := range logits {
		s := float64(m.Theta[m.classes*m.dim+c])
		for j, v := range x {
			s += float64(m.Theta[c*m.dim+j]) * float64(v)
		}
		logits[c] = s
		mx = math.Max(mx, s)
	}
	var z float64
	for _, l := range logits {
		z += math.Exp(l - mx)
	}
	y := int(b.Y[i])
	loss := -(logits[y] - mx - math.Log(z))
	g := make([]float64, len(m.Theta))
	for c := range logits {
		p := math.Exp(logits[c]-mx) / z
		if c == y {
			p--
		}
		for j, v := range x {
			g[c*m.dim+j] = p * float64(v)
		}
		g[m.classes*m.dim+c] = p
	}
	return g, loss
}

func (m *Softmax) ClippedGradSum(b data.Batch, clip float64, grad []float32, norms []float64) (data.Stats, error) {
	sum := make([]float64, len(grad))
	st := data.Stats{N: b.N}
	for i := range b.N {
		g, loss := m.SampleGrad(b, i)
		st.Loss += loss
		var s float64
		for _, v := range g {
			s += v * v
		}
		nrm := math.Sqrt(s)
		if norms != nil {
			norms[i] = nrm
		}
		scale := 1.0
		if nrm > clip {
			scale = clip / nrm
			st.Clipped++
		}
		for j, v := range g {
			sum[j] += scale * v
		}
	}
	for j := range grad {
		grad[j] = float32(sum[j])
	}
	return st, nil
}

func (m *Softmax) PerSampleGradSum(b data.Batch, f func(i int, g []float32), grad []float32) (data.Stats, error) {
	sum := make([]float64, len(grad))
	st := data.Stats{N: b.N}
	g32 := make([]float32, len(grad))
	for i := range b.N {
		g, loss := m.SampleGrad(b, i)
		st.Loss += loss
		for j, v := range g {
			g32[j] = float32(v)
		}
		f(i, g32)
		for j, v := range g32 {
			sum[j] += float64(v)
		}
	}
	for j := range grad {
		grad[j] = float32(sum[j])
	}
	return st, nil
}

var _ optim.GradientOracle = (*models.Network)(nil)

func NewNetwork(t *testing.T, spec models.Spec, seed uint64) *models.Network {
	t.Helper()
	nw, err := graph.New(spec, optim.NewSeededNoise(seed).Rand())
	if err != nil {
		t.Fatal(err)
	}
	return nw
}

// SyntheticBatch draws n examples of dimension d whose label is the sign pattern of two
// coordinates (4 classes).
func SyntheticBatch(n, d int, noise *optim.Noise) data.Batch {
	x := make([]float32, n*d)
	noise.FillGaussian(x, 1)
	y := make([]int32, n)
	for i := range y {
		row := x[i*d : (i+1)*d]
		c := int32(0)
		if row[0] > 0 {
			c++
		}
		if row[1] > 0 {
			c += 2
		}
		y[i] = c
	}
	return data.Batch{X: x, Y: y, N: n}
}

// ReferenceSum returns Σ_i transform(g_i) from per-sample reference gradients, in float64.
func ReferenceSum(t *testing.T, nw *models.Network, b data.Batch, transform func(g []float64)) []float64 {
	t.Helper()
	d := len(b.X) / b.N
	p := len(nw.Params())
	sum := make([]float64, p)
	g32 := make([]float32, p)
	g := make([]float64, p)
	for i := range b.N {
		if _, err := nw.ReferenceGrad(b.X[i*d:(i+1)*d], b.Y[i], g32); err != nil {
			t.Fatal(err)
		}
		for j, v := range g32 {
			g[j] = float64(v)
		}
		transform(g)
		for j, v := range g {
			sum[j] += v
		}
	}
	return sum
}

func ClipRef(c float64, p int) func(g []float64) {
	return func(g []float64) {
		var s float64
		for _, v := range g {
			s += v * v
		}
		if n := math.Sqrt(s); n > c {
			for j := range g {
				g[j] *= c / n
			}
		}
		if p > 1 {
			bound := c / math.Sqrt(float64(p))
			for j := range g {
				g[j] = math.Max(-bound, math.Min(bound, g[j]))
			}
		}
	}
}

func CheckClose(t *testing.T, what string, got []float32, want []float64, tol float64) {
	t.Helper()
	var worst, scale float64
	for i := range want {
		worst = math.Max(worst, math.Abs(float64(got[i])-want[i]))
		scale = math.Max(scale, math.Abs(want[i]))
	}
	if worst > tol*math.Max(scale, 1e-3) {
		t.Errorf("%s: max deviation %v from the reference (scale %v)", what, worst, scale)
	}
}

// Drawn returns the declaration of batch k of a real sampler of the given scheme over n
// examples: batch size b for fixed-size schemes, rate q = b/n for the Poisson schemes (b is
// then given as q·n), rejection threshold minBatch for Poisson with rejection. A step takes
// its BatchInfo only from a sampler, so tests do too.
func Drawn(scheme data.Scheme, n int, b float64, minBatch, k int) data.BatchInfo {
	s, err := data.NewSampler(scheme, n, int(math.Round(b)), minBatch, rand.New(rand.NewPCG(1, 2)))
	if err != nil {
		panic(fmt.Sprintf("test sampler %s n=%d b=%v: %v", scheme, n, b, err))
	}
	if math.Abs(s.SampleRate()*float64(n)-b) > 1e-9*b && scheme != data.SchemeFull {
		panic(fmt.Sprintf("test sampler %s: rate %v·n ≠ %v", scheme, s.SampleRate(), b))
	}
	return data.PlannedBatch(s, k)
}

func MustStepDecay(t *testing.T, rate, gamma float64, every int) optim.StepDecay {
	s, err := optim.NewStepDecay(rate, gamma, every)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// Chi2Bounds returns the two-sided 1−2·tail interval of a χ² variable with dof degrees of
// freedom.
func Chi2Bounds(dof int, tail float64) (lo, hi float64) {
	d := distuv.ChiSquared{K: float64(dof)}
	return d.Quantile(tail), d.Quantile(1 - tail)
}
