package sweep

import (
	"cmp"
	"fmt"
	"image/color"
	"io"
	"math"
	"slices"
	"strings"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgimg"
)

// palette gives each group (algorithm, dataset, ...) a colour, in the table's order
// (Tableau 10).
var palette = []color.RGBA{
	{31, 119, 180, 255}, {255, 127, 14, 255}, {44, 160, 44, 255}, {214, 39, 40, 255},
	{148, 103, 189, 255}, {140, 86, 75, 255}, {227, 119, 194, 255}, {127, 127, 127, 255},
	{188, 189, 34, 255}, {23, 190, 207, 255},
}

// shapes gives each accounting mode a marker, in order of appearance.
var shapes = []draw.GlyphDrawer{
	draw.CircleGlyph{}, draw.SquareGlyph{}, draw.TriangleGlyph{}, draw.CrossGlyph{},
	draw.PlusGlyph{}, draw.RingGlyph{}, draw.BoxGlyph{}, draw.PyramidGlyph{},
}

var dashes = [][]vg.Length{
	nil, {vg.Points(6), vg.Points(2)}, {vg.Points(2), vg.Points(2)}, {vg.Points(8), vg.Points(2), vg.Points(2), vg.Points(2)},
}

// PlotAccuracyEpsilon draws test accuracy (mean over seeds, with ± std bars) against ε: one
// colour per series (the groups that differ only on EpsilonAxis: an algorithm across its target
// ε), one marker and dash pattern per accounting mode, so that one run appears once per mode and
// each series is one line per mode.
func (r *Results) PlotAccuracyEpsilon(w io.Writer) error {
	p, legend, err := r.accuracyPlot()
	if err != nil {
		return err
	}
	return save(p, legend, w)
}

// accuracySeries returns the indices of the finished groups, gathered by their labels on every
// axis but EpsilonAxis, in the table's order.
func (r *Results) accuracySeries() [][]int {
	var out [][]int
	at := map[string]int{}
	for gi, g := range r.Groups {
		if g.Seeds == 0 {
			continue
		}
		var ks []string
		for _, l := range g.Labels {
			if l.Axis != EpsilonAxis {
				ks = append(ks, l.Axis+"="+l.Value)
			}
		}
		k := strings.Join(ks, "\x00")
		i, ok := at[k]
		if !ok {
			i = len(out)
			at[k] = i
			out = append(out, nil)
		}
		out[i] = append(out[i], gi)
	}
	return out
}

// seriesName names a series by its groups' labels on every axis but EpsilonAxis.
func (g Group) seriesName() string {
	var vs []string
	for _, l := range g.Labels {
		if l.Axis != EpsilonAxis {
			vs = append(vs, l.Value)
		}
	}
	return strings.Join(vs, " ")
}

// accuracyPlot builds the accuracy plot: its axes span the points drawn, with a margin, so that
// no marker sits on the frame and the points fill the plot.
func (r *Results) accuracyPlot() (*plot.Plot, plot.Legend, error) {
	p, legend, modes := r.newPlot("test accuracy against ε", "ε (per accounting mode; marker = mode)", "test accuracy (mean ± std over seeds)")
	logX := setEpsilonAxis(p, r.plottedEpsilons())
	var xs, ys []float64
	for si, members := range r.accuracySeries() {
		col := palette[si%len(palette)]
		for mi, m := range modes {
			type point struct{ x, y, std float64 }
			var pts []point
			var labels []string
			for _, gi := range members {
				g := r.Groups[gi]
				for _, e := range g.Epsilon {
					if e.Mode != m || e.Error != "" || (logX && e.Epsilon <= 0) || math.IsInf(e.Epsilon, 0) || math.IsNaN(e.Epsilon) {
						continue
					}
					pts = append(pts, point{e.Epsilon, g.AccuracyMean, g.AccuracyStd})
					if l := string(e.Label); !slices.Contains(labels, l) {
						labels = append(labels, l)
					}
					xs = append(xs, e.Epsilon)
					ys = append(ys, g.AccuracyMean-g.AccuracyStd, g.AccuracyMean+g.AccuracyStd)
				}
			}
			if len(pts) == 0 {
				continue
			}
			slices.SortStableFunc(pts, func(a, b point) int { return cmp.Compare(a.x, b.x) })
			sorted, sortedStd := make(plotter.XYs, len(pts)), make([]float64, len(pts))
			for i, q := range pts {
				sorted[i], sortedStd[i] = plotter.XY{X: q.x, Y: q.y}, q.std
			}
			sc, err := plotter.NewScatter(sorted)
			if err != nil {
				return nil, legend, err
			}
			sc.GlyphStyle = draw.GlyphStyle{Color: col, Radius: vg.Points(4), Shape: shapes[mi%len(shapes)]}
			bars, err := plotter.NewYErrorBars(errPoints{sorted, sortedStd})
			if err != nil {
				return nil, legend, err
			}
			bars.LineStyle.Color = col
			p.Add(sc, bars)
			name := fmt.Sprintf("%s · %s (%s)", r.Groups[members[0]].seriesName(), m, strings.Join(labels, ", "))
			if len(sorted) == 1 {
				legend.Add(fmt.Sprintf("%s: ε %.3g", name, sorted[0].X), sc)
				continue
			}
			l, err := plotter.NewLine(sorted)
			if err != nil {
				return nil, legend, err
			}
			l.LineStyle.Color = col
			l.LineStyle.Width = vg.Points(1.5)
			l.LineStyle.Dashes = dashes[mi%len(dashes)]
			p.Add(l)
			legend.Add(name, l, sc)
		}
	}
	if !logX {
		if _, hi := span(xs); hi > 0 {
			p.X.Max = hi * (1 + plotMargin)
		}
	}
	if lo, hi := span(ys); lo <= hi {
		// At least 2 points of accuracy tall, so that equal accuracies do not fill the plot
		// with a magnified nothing.
		pad := max(hi-lo, 0.02) * plotMargin
		p.Y.Min, p.Y.Max = max(lo-pad, 0), hi+pad
	}
	return p, legend, nil
}

// plotMargin is the fraction of an axis's data range left free beyond its last point, so that a
// marker at the end of the range is drawn whole.
const plotMargin = 0.06

// span returns the smallest and largest finite values of xs (+Inf, -Inf if none).
func span(xs []float64) (lo, hi float64) {
	lo, hi = math.Inf(1), math.Inf(-1)
	for _, x := range xs {
		if !math.IsInf(x, 0) && !math.IsNaN(x) {
			lo, hi = math.Min(lo, x), math.Max(hi, x)
		}
	}
	return lo, hi
}

// plottedEpsilons returns every finite ε the accuracy plot draws.
func (r *Results) plottedEpsilons() []float64 {
	var eps []float64
	for _, g := range r.Groups {
		if g.Seeds == 0 {
			continue
		}
		for _, e := range g.Epsilon {
			if e.Error == "" && !math.IsInf(e.Epsilon, 0) && !math.IsNaN(e.Epsilon) {
				eps = append(eps, e.Epsilon)
			}
		}
	}
	return eps
}

// logRange is the spread of positive ε (largest over smallest) above which the accuracy plot's x
// axis is logarithmic: a conservative certified bound can be 100× the others (DP-SGLD's
// sgld-conservative against its paper bound), which on a linear axis squeezes every other point
// against zero.
const logRange = 100

// setEpsilonAxis makes p's x axis logarithmic when the positive values in eps span more than
// logRange, and reports whether it did.
func setEpsilonAxis(p *plot.Plot, eps []float64) bool {
	lo, hi := math.Inf(1), 0.0
	for _, e := range eps {
		if e > 0 {
			lo, hi = math.Min(lo, e), math.Max(hi, e)
		}
	}
	if hi == 0 || hi/lo <= logRange {
		return false
	}
	p.X.Scale = plot.LogScale{}
	p.X.Tick.Marker = plot.LogTicks{Prec: -1}
	p.X.Min, p.X.Max = lo/2, hi*2
	p.X.Label.Text += ", log scale"
	return true
}

// errPoints are points with the standard deviation of each.
type errPoints struct {
	plotter.XYs
	std []float64
}

func (e errPoints) YError(i int) (float64, float64) { return e.std[i], e.std[i] }

// PlotEpsilonSteps draws ε against steps for the first finished cell of every group: one colour
// per group, one dash pattern per accounting mode.
func (r *Results) PlotEpsilonSteps(w io.Writer) error {
	p, legend, modes := r.newPlot("ε against steps", "steps", "ε")
	p.Y.Min = 0
	var xs, ys []float64
	for gi, g := range r.Groups {
		key, _ := groupKey(Cell{Labels: g.Labels})
		for _, c := range r.Cells {
			if k, _ := groupKey(c.Cell); k != key || c.Summary == nil {
				continue
			}
			for mi, m := range modes {
				pts := c.Curve[m]
				if len(pts) == 0 {
					continue
				}
				xy := make(plotter.XYs, len(pts))
				for i, q := range pts {
					xy[i] = plotter.XY{X: q.X, Y: q.Y}
					xs, ys = append(xs, q.X), append(ys, q.Y)
				}
				l, sc, err := plotter.NewLinePoints(xy)
				if err != nil {
					return err
				}
				col := palette[gi%len(palette)]
				l.LineStyle.Color = col
				l.LineStyle.Width = vg.Points(1.5)
				l.LineStyle.Dashes = dashes[mi%len(dashes)]
				sc.GlyphStyle = draw.GlyphStyle{Color: col, Radius: vg.Points(2), Shape: shapes[mi%len(shapes)]}
				p.Add(l, sc)
				legend.Add(fmt.Sprintf("%s · %s (seed %s)", g.name(), m, c.Label(SeedAxis)), l, sc)
			}
			break
		}
	}
	if _, hi := span(xs); hi > 0 {
		p.X.Max = hi * (1 + plotMargin)
	}
	if _, hi := span(ys); hi > 0 {
		p.Y.Max = hi * (1 + plotMargin)
	}
	return save(p, legend, w)
}

// newPlot starts a plot of the suite with its x axis from 0, an empty legend and the modes.
func (r *Results) newPlot(title, x, y string) (*plot.Plot, plot.Legend, []string) {
	p := plot.New()
	p.Title.Text = r.Suite + ": " + title
	p.X.Label.Text, p.Y.Label.Text = x, y
	p.X.Min = 0
	return p, plot.NewLegend(), r.Modes()
}

// save draws the plot with its legend beside the axes, so that no entry hides a point. The
// legend's column is as wide as its longest entry, and the image grows taller when the legend
// needs it; a margin keeps everything off the image's edges.
func save(p *plot.Plot, legend plot.Legend, w io.Writer) error {
	const (
		width, minHeight = 12 * vg.Inch, 6 * vg.Inch
		margin, gap      = vg.Length(10), vg.Length(14)
	)
	p.Add(plotter.NewGrid())
	legend.Top, legend.Left = true, true
	// The legend's size does not depend on where it is drawn: measure it on a scratch canvas.
	ext := legend.Rectangle(draw.New(vgimg.New(width, minHeight))).Size()
	height := max(minHeight, ext.Y+2*margin+vg.Points(30))
	c := vgimg.New(width, height)
	dc := draw.New(c)
	dc.SetColor(color.White)
	dc.Fill(dc.Rectangle.Path())
	inner := draw.Crop(dc, margin, -margin, margin, -margin)
	lw := min(ext.X, inner.Size().X/2)
	p.Draw(draw.Crop(inner, 0, -(lw + gap), 0, 0))
	// Level with the top of the axes (below the title).
	legend.Draw(draw.Crop(inner, inner.Size().X-lw, 0, 0, -vg.Points(20)))
	_, err := vgimg.PngCanvas{Canvas: c}.WriteTo(w)
	return err
}
