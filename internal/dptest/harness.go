package dptest

import (
	"errors"
	"fmt"
	"math"
	"reflect"

	"github.com/dptrain/dptrain/accounting"
	"github.com/dptrain/dptrain/data"
	"github.com/dptrain/dptrain/optim"
)

// Tolerance is the relative margin allowed above the declared sensitivity for float32
// summation of the clipped contributions (measured at most 1.0000037·C).
const Tolerance = 1e-5

// Relation is how the neighbouring batch D′ differs from D.
type Relation int

const (
	// Remove drops one example: add/remove adjacency, bound = Sensitivity.
	Remove Relation = iota
	// Replace substitutes one example: replace-one adjacency, bound = 2·Sensitivity.
	Replace
)

func (r Relation) String() string {
	if r == Remove {
		return "remove"
	}
	return "replace"
}

// Experiment is one side of a neighbouring pair, run twice: New must return a fresh optimizer
// and model in the same state each time, with identical seeded noise (optim.NewSeededNoise),
// and with any initialisation the optimizer needs (optim.Initializer) done.
type Experiment struct {
	New func() (optim.Optimizer, optim.GradientOracle, error)
	// Params, when not nil, overwrites the model's parameters after New: adversarial
	// parameters, identical on both sides.
	Params []float32
	// Info is the sampler's declaration of the batch, identical on both sides (a Poisson
	// batch's realised size is never declared).
	Info data.BatchInfo
}

// Measurement is how far one record's release moved between D and D′.
type Measurement struct {
	Record accounting.Step
	// Offset and Len locate the record's release in the parameters.
	Offset, Len int
	// Delta is ‖S(D) − S(D′)‖₂ in the units of the record (the released gradient sum).
	Delta float64
	// Bound is the record's Sensitivity (Remove) or twice it (Replace).
	Bound float64
	// Allowance is the float32 rounding of the stored parameters and of the released sum,
	// in the same units, computed from the values on both sides.
	Allowance float64
}

// Ratio is Delta over the record's Sensitivity: at most 1 for a removal and 2 for a
// replacement, up to Tolerance and Allowance.
func (m Measurement) Ratio() float64 { return m.Delta / m.Record.Sensitivity }

// OK reports whether the release moved by at most its declared bound.
func (m Measurement) OK() bool { return m.Delta <= m.Bound*(1+Tolerance)+m.Allowance }

func (m Measurement) String() string {
	return fmt.Sprintf("record %s block %d: ‖ΔS‖ = %.6g, bound %.6g (ratio to C %.7f, rounding allowance %.2g)",
		m.Record.Mechanism, m.Record.Block, m.Delta, m.Bound, m.Ratio(), m.Allowance)
}

// Measure runs one step of e on d and one on dn, and returns one measurement per record. The
// two sides must release the same records (a record depends only on public declarations);
// a step that fails on either side is an error.
func Measure(e Experiment, d, dn data.Batch, rel Relation) ([]Measurement, error) {
	s, err := Run(e, d)
	if err != nil {
		return nil, err
	}
	return s.Measure(dn, rel)
}

// Step is one step of an experiment on D, kept to be measured against any number of
// neighbouring batches D′: each D′ runs a fresh experiment of its own, and D's step, which is
// deterministic (seeded noise, identical state), is not run again for each.
type Step struct {
	e             Experiment
	o             optim.Optimizer
	before, after []float32
	res           optim.Result
}

// Run takes one step of a fresh experiment e on d.
func Run(e Experiment, d data.Batch) (*Step, error) {
	o, before, after, res, err := run(e, d)
	if err != nil {
		return nil, fmt.Errorf("dptest: step on D: %w", err)
	}
	return &Step{e: e, o: o, before: before, after: after, res: res}, nil
}

// Measure runs one step of a fresh experiment on dn, a neighbour of the batch s was run on by
// rel, and returns one measurement per record, as the package-level Measure does.
func (s *Step) Measure(dn data.Batch, rel Relation) ([]Measurement, error) {
	o, before, after, res := s.o, s.before, s.after, s.res
	_, _, afterN, resN, err := run(s.e, dn)
	if err != nil {
		return nil, fmt.Errorf("dptest: step on D′: %w", err)
	}
	if !reflect.DeepEqual(res.Records, resN.Records) {
		return nil, fmt.Errorf("dptest: the records released on D and D′ differ (%+v against %+v): a record must depend only on public declarations", res.Records, resN.Records)
	}
	if len(res.Records) == 0 {
		return nil, errors.New("dptest: the step released no record")
	}
	out := make([]Measurement, 0, len(res.Records))
	for _, r := range res.Records {
		if rel == Remove && r.Neighbouring == accounting.ReplaceOne {
			return nil, fmt.Errorf("dptest: the record declares replace-one adjacency; removing an example changes its public batch size: use Replace")
		}
		off, n := 0, len(before)
		if br, ok := o.(optim.BlockReleaser); ok {
			off, n = br.BlockSpan(r.Block)
		}
		if off < 0 || off+n > len(before) {
			return nil, fmt.Errorf("dptest: block %d spans [%d, %d) outside the %d parameters", r.Block, off, off+n, len(before))
		}
		b := optim.Normaliser(r)
		if !(r.StepSize > 0) || !(b > 0) {
			return nil, fmt.Errorf("dptest: record with step size %v and normaliser %v: cannot convert the update to the released sum", r.StepSize, b)
		}
		m := Measurement{Record: r, Offset: off, Len: n, Bound: r.Sensitivity}
		if rel == Replace {
			m.Bound *= 2
		}
		m.Delta, m.Allowance = difference(before[off:off+n], after[off:off+n], afterN[off:off+n], b/r.StepSize, releaseGrid(r.NoiseStd))
		out = append(out, m)
	}
	return out, nil
}

// run takes one step of a fresh experiment on batch x and returns the parameters before and
// after it.
func run(e Experiment, x data.Batch) (optim.Optimizer, []float32, []float32, optim.Result, error) {
	o, m, err := e.New()
	if err != nil {
		return nil, nil, nil, optim.Result{}, err
	}
	p := m.Params()
	if e.Params != nil {
		if len(e.Params) != len(p) {
			return nil, nil, nil, optim.Result{}, fmt.Errorf("%d parameters given for a model with %d", len(e.Params), len(p))
		}
		copy(p, e.Params)
	}
	before := append([]float32(nil), p...)
	res, err := o.Step(m, x, e.Info)
	if err != nil {
		return nil, nil, nil, res, err
	}
	return o, before, append([]float32(nil), m.Params()...), res, nil
}

// difference returns ‖(a − an)·unit‖₂ (the parameters after the step on D and D′, in units
// of the released sum) and the rounding allowance: one float32 ulp of each stored parameter,
// 2⁻²² of each side's update (the released sum is rounded to float32 once, the update once
// more) and one release grid step grid per side (the noisy sum is rounded to it, in the sum's
// units).
func difference(before, a, an []float32, unit, grid float64) (delta, allowance float64) {
	var sd, sa float64
	for j := range a {
		x, y := float64(a[j]), float64(an[j])
		v := (x - y) * unit
		sd += v * v
		r := (ulp(a[j])+ulp(an[j]))*unit + 0x1p-22*(math.Abs(float64(before[j])-x)+math.Abs(float64(before[j])-y))*unit + 2*grid
		sa += r * r
	}
	return math.Sqrt(sd), math.Sqrt(sa)
}

// releaseGrid bounds the spacing of the public grid a noisy sum with noise std is rounded to
// (optim's release grid, 2^(⌊log₂ std⌋ − 20) ≤ 2⁻²⁰·std); 0 without noise.
func releaseGrid(std float64) float64 { return 0x1p-20 * std }

// ulp is the spacing of float32 values at x.
func ulp(x float32) float64 {
	a := float32(math.Abs(float64(x)))
	return float64(math.Nextafter32(a, float32(math.Inf(1))) - a)
}

// Without returns b without example i (add/remove neighbour).
func Without(b data.Batch, i int) data.Batch {
	dim := len(b.X) / b.N
	out := data.Batch{N: b.N - 1}
	out.X = append(append([]float32(nil), b.X[:i*dim]...), b.X[(i+1)*dim:]...)
	out.Y = append(append([]int32(nil), b.Y[:i]...), b.Y[i+1:]...)
	if b.Index != nil {
		out.Index = append(append([]int(nil), b.Index[:i]...), b.Index[i+1:]...)
	}
	return out
}

// With returns b with example i replaced by (x, y) (replace-one neighbour; its dataset index
// is kept).
func With(b data.Batch, i int, x []float32, y int32) data.Batch {
	dim := len(b.X) / b.N
	out := data.Batch{N: b.N, X: append([]float32(nil), b.X...), Y: append([]int32(nil), b.Y...), Index: b.Index}
	copy(out.X[i*dim:(i+1)*dim], x)
	out.Y[i] = y
	return out
}
