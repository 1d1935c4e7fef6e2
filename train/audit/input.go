package audit

import (
	"fmt"
	"math"
	"math/rand/v2"

	"github.com/dptrain/dptrain/data"
	"github.com/dptrain/dptrain/models"
	"github.com/dptrain/dptrain/optim"
)

// inputCanaries are the final-model audit's canaries: out-of-distribution examples, each a
// random Gaussian direction scaled to the norm of one of the last m training examples (its
// source, so every norm bound the data satisfies still holds), with a label drawn uniformly
// from the classes other than its source's. Far from the data, a canary is fitted only if it
// is trained on.
type inputCanaries struct {
	included []bool
	// replace: an excluded canary's slot holds its source example with the true label
	// (replace-one neighbours, n fixed); otherwise it is absent (add/remove).
	replace bool
	rng     *rand.Rand
	x       []float32 // the canaries' inputs, m rows of d
	y       []int32   // their wrong labels
	d       int
}

// split is train.Options.TrainSplit: it takes the canaries' sources from the end of s and
// returns the training split the run sees.
func (c *inputCanaries) split(s *data.Split) (*data.Split, error) {
	m, n := len(c.included), s.Len()
	if s.Y == nil {
		return nil, fmt.Errorf("audit: input canaries are mislabelled examples: the training split has no labels")
	}
	if 4*m > n {
		return nil, fmt.Errorf("audit: %d input canaries from %d training examples: use at most n/4 (lower --canaries or raise data.train_subset)", m, n)
	}
	classes := int32(0)
	for _, y := range s.Y[:n] {
		classes = max(classes, y+1)
	}
	if classes < 2 {
		return nil, fmt.Errorf("audit: input canaries need at least 2 classes, the training split has %d", classes)
	}
	d, base := s.D, n-m
	c.d = d
	c.x = make([]float32, m*d)
	c.y = make([]int32, m)
	for i := range m {
		src, x := s.Row(base+i), c.x[i*d:(i+1)*d]
		var ns, nx float64
		for j := range x {
			x[j] = float32(c.rng.NormFloat64())
			ns += float64(src[j]) * float64(src[j])
			nx += float64(x[j]) * float64(x[j])
		}
		scale := 1.0
		if ns > 0 {
			scale = math.Sqrt(ns / nx)
		}
		for j := range x {
			x[j] = float32(float64(x[j]) * scale)
		}
		// float32 rounding may leave the norm an ulp above the source's: shrink until it is not.
		for optim.Norm2(x) > math.Sqrt(ns) && ns > 0 {
			for j, v := range x {
				x[j] = math.Nextafter32(v, 0)
			}
		}
		c.y[i] = (s.Y[base+i] + 1 + int32(c.rng.IntN(int(classes-1)))) % classes
	}
	out := &data.Split{D: d, X: append([]float32(nil), s.X[:base*d]...), Y: append([]int32(nil), s.Y[:base]...)}
	for i, in := range c.included {
		switch {
		case in:
			out.X = append(out.X, c.x[i*d:(i+1)*d]...)
			out.Y = append(out.Y, c.y[i])
		case c.replace:
			out.X = append(out.X, s.Row(base+i)...)
			out.Y = append(out.Y, s.Y[base+i])
		}
	}
	out.N = len(out.Y)
	return out, nil
}

// scores returns minus the final model's loss on every canary (with its wrong label): an
// included canary was fitted, so its loss is lower.
func (c *inputCanaries) scores(m models.Model) ([]float64, error) {
	out := make([]float64, len(c.included))
	for i := range out {
		st, err := m.Evaluate(data.Batch{X: c.x[i*c.d : (i+1)*c.d], Y: c.y[i : i+1], N: 1})
		if err != nil {
			return nil, fmt.Errorf("audit: scoring canary %d: %w", i, err)
		}
		out[i] = -st.Loss
	}
	return out, nil
}
