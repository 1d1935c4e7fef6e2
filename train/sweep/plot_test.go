package sweep

import (
	"bytes"
	"testing"

	"gonum.org/v1/plot"

	"github.com/dptrain/dptrain/train"
)

// TestEpsilonAxis checks that the accuracy plot turns logarithmic only when ε spans more than
// logRange, and that such a plot renders (a zero ε is left out rather than breaking the log
// scale).
func TestEpsilonAxis(t *testing.T) {
	for _, tc := range []struct {
		name string
		eps  []float64
		log  bool
	}{
		{"empty", nil, false},
		{"one value", []float64{3}, false},
		{"close values", []float64{0.37, 3}, false},
		{"spread at the limit", []float64{1, 100}, false},
		{"wide spread", []float64{0.351, 3, 259.149}, true},
		{"zero ignored", []float64{0, 3, 5}, false},
		{"zero with wide spread", []float64{0, 0.01, 5}, true},
	} {
		if got := setEpsilonAxis(plot.New(), tc.eps); got != tc.log {
			t.Errorf("%s: log axis %v, want %v", tc.name, got, tc.log)
		}
		var modes []train.ModeEpsilon
		for i, e := range tc.eps {
			modes = append(modes, train.ModeEpsilon{Mode: string(rune('a' + i)), Epsilon: e, Label: "certified"})
		}
		r := &Results{Suite: "test", Groups: []Group{{Labels: []Label{{Axis: "algorithm", Value: "x"}}, Seeds: 1, Cells: 1, AccuracyMean: 0.8, Epsilon: modes}}}
		var buf bytes.Buffer
		if err := r.PlotAccuracyEpsilon(&buf); err != nil || buf.Len() == 0 {
			t.Errorf("%s: rendering: %v (%d bytes)", tc.name, err, buf.Len())
		}
	}
}
