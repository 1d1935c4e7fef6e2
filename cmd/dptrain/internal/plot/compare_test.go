package plot

import (
	"math"
	"slices"
	"strings"
	"testing"

	"github.com/dptrain/dptrain/accounting/compare"

	"gonum.org/v1/plot"

	"github.com/dptrain/dptrain/accounting"
)

// Coinciding curves are drawn once and named together; a curve far above the others is
// listed as off scale.
func TestGroupCurves(t *testing.T) {
	curve := func(scale float64) []compare.Point {
		return []compare.Point{{Steps: 100, Epsilon: 0.5 * scale}, {Steps: 200, Epsilon: 0.8 * scale}, {Steps: 300, Epsilon: scale}}
	}
	r := compare.Report{Modes: []compare.Row{
		{Mode: "rdp", Label: accounting.Certified, Applicable: true, Curve: curve(3)},
		{Mode: "pld", Label: accounting.Certified, Applicable: true, Curve: curve(2)},
		{Mode: "mbcd", Label: accounting.Paper, Applicable: true, Curve: curve(5000)},
		{Mode: "mbcd-certified", Label: accounting.Certified, Applicable: true, Curve: curve(5000)},
		{Mode: "gdp", Applicable: false},
	}, Best: &compare.Row{Mode: "best", Curve: curve(2)}}
	got := groupCurves(r)
	var names []string
	var off []bool
	for _, s := range got {
		names = append(names, strings.Join(s.names, " = "))
		off = append(off, s.offScale)
	}
	want := []string{"rdp (certified)", "pld (certified) = best certified (pointwise minimum)", "mbcd (paper) = mbcd-certified (certified)"}
	if !slices.Equal(names, want) || !slices.Equal(off, []bool{false, false, true}) {
		t.Errorf("series %q off scale %v, want %q and [false false true]", names, off, want)
	}
}

func TestPlotAxisTicks(t *testing.T) {
	for _, tc := range []struct {
		lo, hi float64
		want   []string
	}{
		{0, 20000, []string{"0", "5000", "10000", "15000", "20000"}},
		{0, 400, []string{"0", "100", "200", "300", "400"}},
		{0, 1172, []string{"0", "200", "400", "600", "800", "1000"}},
	} {
		var labels []string
		for _, tk := range (roundTicks{}).Ticks(tc.lo, tc.hi) {
			if tk.Label != "" {
				labels = append(labels, tk.Label)
			}
		}
		if !slices.Equal(labels, tc.want) {
			t.Errorf("x ticks over [%v, %v]: %q, want %q", tc.lo, tc.hi, labels, tc.want)
		}
	}
	for _, tc := range []struct{ lo, hi, wantLo, wantHi float64 }{
		{0.21, 3.224, 0.2, 5}, {0.5, 1, 0.5, 1}, {0.003, 8190, 0.002, 10000},
	} {
		lo, hi := logEnds(tc.lo, tc.hi)
		if math.Abs(lo-tc.wantLo) > 1e-12 || math.Abs(hi-tc.wantHi) > 1e-9 {
			t.Errorf("log ends of [%v, %v]: [%v, %v], want [%v, %v]", tc.lo, tc.hi, lo, hi, tc.wantLo, tc.wantHi)
		}
		ticks := (logTicks125{}).Ticks(lo, hi)
		for _, end := range []float64{lo, hi} {
			if !slices.ContainsFunc(ticks, func(tk plot.Tick) bool { return tk.Label != "" && math.Abs(tk.Value-end) <= 1e-9*end }) {
				t.Errorf("log axis [%v, %v]: end %v unlabelled: %+v", lo, hi, end, ticks)
			}
		}
	}
}

func TestLogTicks125(t *testing.T) {
	tests := []struct {
		lo, hi float64
		want   []string // labels that must appear
	}{
		{0.16, 0.28, []string{"0.2"}},
		{0.3, 8, []string{"0.5", "1", "2", "5"}},
		{0.01, 1e5, []string{"0.01", "1", "100", "10000"}},
	}
	for _, tt := range tests {
		labels := map[string]bool{}
		n := 0
		for _, tk := range (logTicks125{}).Ticks(tt.lo, tt.hi) {
			if tk.Label != "" {
				labels[tk.Label] = true
				n++
			}
		}
		if n < 3 {
			t.Errorf("[%v, %v]: only %d labelled ticks", tt.lo, tt.hi, n)
		}
		for _, w := range tt.want {
			if !labels[w] {
				t.Errorf("[%v, %v]: no %q tick in %v", tt.lo, tt.hi, w, labels)
			}
		}
	}
}
