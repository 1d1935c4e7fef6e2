package optim

import (
	"fmt"
	"math"
)

// Test-only models implementing GradientOracle in plain Go, each written independently of the
// code under test (their clipping does not call ClipL2).

// tableModel's per-sample gradient is the example's feature row itself: g_i = X[i·d:(i+1)·d],
// independent of the parameters, so the expected sums are easy to compute by hand.
type tableModel struct {
	params []float32
	calls  int
}

func (m *tableModel) Params() []float32 { return m.params }

func (m *tableModel) rows(b Batch) ([][]float32, error) {
	d := len(m.params)
	if len(b.X) != b.N*d {
		return nil, fmt.Errorf("tableModel: %d values for %d rows of %d", len(b.X), b.N, d)
	}
	r := make([][]float32, b.N)
	for i := range r {
		r[i] = append([]float32(nil), b.X[i*d:(i+1)*d]...)
	}
	return r, nil
}

func (m *tableModel) ClippedGradSum(b Batch, clip float64, grad []float32, norms []float64) (Stats, error) {
	m.calls++
	rows, err := m.rows(b)
	if err != nil {
		return Stats{}, err
	}
	sum := make([]float64, len(grad))
	st := Stats{N: b.N}
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

func (m *tableModel) PerSampleGradSum(b Batch, f func(i int, g []float32), grad []float32) (Stats, error) {
	m.calls++
	rows, err := m.rows(b)
	if err != nil {
		return Stats{}, err
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
	return Stats{N: b.N}, nil
}

// zeroModel has d parameters and zero gradients for every example, without storing rows.
type zeroModel struct {
	params []float32
	calls  int
}

func (m *zeroModel) Params() []float32 { return m.params }
func (m *zeroModel) ClippedGradSum(b Batch, _ float64, grad []float32, _ []float64) (Stats, error) {
	m.calls++
	clear(grad)
	return Stats{N: b.N}, nil
}
func (m *zeroModel) PerSampleGradSum(b Batch, _ func(int, []float32), grad []float32) (Stats, error) {
	m.calls++
	clear(grad)
	return Stats{N: b.N}, nil
}

// softmaxModel is multinomial logistic regression with bias: logits = W·x + b, W stored
// row-major (classes × dim) followed by the classes biases. The per-sample gradient of the
// cross-entropy is (p − e_y) ⊗ (x, 1). maxFeatureNorm records the largest ‖x‖ it was given.
type softmaxModel struct {
	dim, classes   int
	params         []float32
	maxFeatureNorm float64
}

func newSoftmaxModel(dim, classes int) *softmaxModel {
	return &softmaxModel{dim: dim, classes: classes, params: make([]float32, classes*dim+classes)}
}

func (m *softmaxModel) Params() []float32 { return m.params }

// sampleGrad returns sample i's gradient and loss.
func (m *softmaxModel) sampleGrad(b Batch, i int) ([]float64, float64) {
	x := b.X[i*m.dim : (i+1)*m.dim]
	var xn float64
	for _, v := range x {
		xn += float64(v) * float64(v)
	}
	m.maxFeatureNorm = math.Max(m.maxFeatureNorm, math.Sqrt(xn))
	logits := make([]float64, m.classes)
	mx := math.Inf(-1)
	for c := range logits {
		s := float64(m.params[m.classes*m.dim+c])
		for j, v := range x {
			s += float64(m.params[c*m.dim+j]) * float64(v)
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
	g := make([]float64, len(m.params))
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

func (m *softmaxModel) ClippedGradSum(b Batch, clip float64, grad []float32, norms []float64) (Stats, error) {
	sum := make([]float64, len(grad))
	st := Stats{N: b.N}
	for i := range b.N {
		g, loss := m.sampleGrad(b, i)
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

func (m *softmaxModel) PerSampleGradSum(b Batch, f func(i int, g []float32), grad []float32) (Stats, error) {
	sum := make([]float64, len(grad))
	st := Stats{N: b.N}
	g32 := make([]float32, len(grad))
	for i := range b.N {
		g, loss := m.sampleGrad(b, i)
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
