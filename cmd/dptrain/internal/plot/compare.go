package plot

import (
	"errors"
	"fmt"
	"image/color"
	"io"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/dptrain/dptrain/accounting/compare"

	"github.com/dptrain/dptrain/data"
	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgimg"
)

// modePalette gives every accounting mode its own colour (Tableau 10, then two more), by the
// mode's position in the registry, so a mode keeps its colour from one plot to the next.
var modePalette = []color.RGBA{
	{31, 119, 180, 255}, {255, 127, 14, 255}, {44, 160, 44, 255}, {214, 39, 40, 255},
	{148, 103, 189, 255}, {140, 86, 75, 255}, {227, 119, 194, 255}, {127, 127, 127, 255},
	{188, 189, 34, 255}, {23, 190, 207, 255}, {0, 0, 128, 255}, {128, 128, 0, 255},
}

// modeDashes and modeGlyphs give each mode a dash pattern and a marker of its own, so that
// curves stay distinguishable where they cross or run close, also in grey print.
var modeDashes = [][]vg.Length{
	nil, {vg.Points(7), vg.Points(3)}, {vg.Points(2), vg.Points(2)},
	{vg.Points(8), vg.Points(2), vg.Points(2), vg.Points(2)}, {vg.Points(12), vg.Points(4)},
	{vg.Points(4), vg.Points(2), vg.Points(1), vg.Points(2), vg.Points(1), vg.Points(2)},
}

var modeGlyphs = []draw.GlyphDrawer{
	draw.CircleGlyph{}, draw.SquareGlyph{}, draw.TriangleGlyph{}, draw.CrossGlyph{},
	draw.RingGlyph{}, draw.BoxGlyph{}, draw.PyramidGlyph{}, draw.PlusGlyph{},
}

// offScaleRatio is how far above the smallest final ε a mode's curve may reach and still be
// drawn; higher modes (output perturbation, bounds without subsampling amplification) are
// listed in the legend with their final ε instead of squashing every other curve.
const offScaleRatio = 1000

// plotSeries is one curve of the plot; modes whose curves coincide share one, and the legend
// names them together.
type plotSeries struct {
	names    []string // "rdp (certified)", ...
	style    int      // index into the palette, dashes and glyphs
	xy       plotter.XYs
	offScale bool
}

func (s plotSeries) final() float64 { return s.xy[len(s.xy)-1].Y }

// groupCurves returns the series to draw: every applicable mode, then the pointwise best,
// with curves equal at every point (to a relative 1e-9) merged into one series.
func groupCurves(r compare.Report) []plotSeries {
	var out []plotSeries
	add := func(name string, style int, c []compare.Point) {
		xy := make(plotter.XYs, len(c))
		for j, pt := range c {
			xy[j].X, xy[j].Y = float64(pt.Steps), pt.Epsilon
		}
		for k := range out {
			if sameCurve(out[k].xy, xy) {
				out[k].names = append(out[k].names, name)
				return
			}
		}
		out = append(out, plotSeries{names: []string{name}, style: style, xy: xy})
	}
	for i, row := range r.Modes {
		if row.Applicable && len(row.Curve) > 0 {
			add(fmt.Sprintf("%s (%s)", row.Mode, row.Label), i, row.Curve)
		}
	}
	if b := r.Best; b != nil && len(b.Curve) > 0 {
		add("best certified (pointwise minimum)", -1, b.Curve)
	}
	low := math.Inf(1)
	for _, s := range out {
		low = math.Min(low, s.final())
	}
	for k := range out {
		top := 0.0
		for _, p := range out[k].xy {
			top = math.Max(top, p.Y)
		}
		out[k].offScale = low > 0 && top > offScaleRatio*low
	}
	return out
}

func sameCurve(a, b plotter.XYs) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i].X != b[i].X || math.Abs(a[i].Y-b[i].Y) > 1e-9*math.Abs(a[i].Y) {
			return false
		}
	}
	return true
}

// Compare writes ε against steps as a PNG: one curve per applicable mode (coinciding
// curves drawn once and named together), each with its own colour, dash pattern and markers,
// the legend (modes, labels, final ε) below the axes; the y axis is logarithmic, and says
// so, when every ε is positive, and both axes end on labelled ticks.
func Compare(file, title string, r compare.Report) error {
	p := plot.New()
	p.Title.Text = title
	if title == "" {
		p.Title.Text = fmt.Sprintf("ε (δ = %g) against steps", r.Delta)
	}
	p.Title.Padding = vg.Points(10)
	p.X.Label.Text = "steps"
	p.Y.Label.Text = fmt.Sprintf("ε (δ = %g)", r.Delta)
	series := groupCurves(r)
	positive, lo, hi, xmax := true, math.Inf(1), 0.0, 0.0
	drawn := 0
	for _, s := range series {
		if s.offScale {
			continue
		}
		drawn++
		for _, pt := range s.xy {
			positive = positive && pt.Y > 0
			lo, hi, xmax = math.Min(lo, pt.Y), math.Max(hi, pt.Y), math.Max(xmax, pt.X)
		}
	}
	if drawn == 0 {
		return errors.New("--plot: no applicable mode to plot")
	}
	if positive {
		p.Y.Scale = plot.LogScale{}
		p.Y.Tick.Marker = logTicks125{}
		p.Y.Label.Text += ", log scale"
		p.Y.Min, p.Y.Max = logEnds(lo, hi)
	} else {
		p.Y.Min = math.Min(0, lo)
	}
	p.X.Min, p.X.Max = 0, xmax
	p.X.Tick.Marker = roundTicks{}

	type entry struct {
		name   string
		thumbs []plot.Thumbnailer
	}
	var entries []entry
	for k, s := range series {
		col, dash, glyph := color.Color(color.Black), []vg.Length{vg.Points(1), vg.Points(3)}, draw.GlyphDrawer(draw.RingGlyph{})
		width := vg.Points(2.5)
		if s.style >= 0 {
			col = modePalette[s.style%len(modePalette)]
			dash = modeDashes[s.style%len(modeDashes)]
			glyph = modeGlyphs[s.style%len(modeGlyphs)]
			width = vg.Points(1.6)
		}
		line, err := plotter.NewLine(s.xy)
		if err != nil {
			return fmt.Errorf("plot %s: %w", s.names[0], err)
		}
		line.Color, line.Dashes, line.Width = col, dash, width
		// Markers at a few points, shifted per series so that close curves show both.
		var marks plotter.XYs
		for j := len(s.xy) * (k % 4) / (4 * 8); j < len(s.xy); j += max(1, len(s.xy)/8) {
			marks = append(marks, s.xy[j])
		}
		sc, err := plotter.NewScatter(marks)
		if err != nil {
			return fmt.Errorf("plot %s: %w", s.names[0], err)
		}
		sc.GlyphStyle = draw.GlyphStyle{Color: col, Radius: vg.Points(3), Shape: glyph}
		name := fmt.Sprintf("%s: %s", strings.Join(s.names, " = "), strconv.FormatFloat(s.final(), 'g', 4, 64))
		if s.offScale {
			name += ", off scale"
		} else {
			p.Add(line, sc)
		}
		entries = append(entries, entry{name, []plot.Thumbnailer{line, sc}})
	}
	p.Add(plotter.NewGrid())
	p.BackgroundColor = color.White

	// The legend goes below the axes, in two columns, so the canvas has no empty margin.
	rows := (len(series) + 1) / 2
	const width, plotHeight = 11 * vg.Inch, 5 * vg.Inch
	legendHeight := vg.Length(rows)*vg.Points(16) + vg.Points(8)
	img := vgimg.New(width, plotHeight+legendHeight)
	dc := draw.New(img)
	dc.SetColor(color.White)
	dc.Fill(dc.Rectangle.Path())
	p.Draw(draw.Crop(dc, vg.Points(6), -vg.Points(14), legendHeight, -vg.Points(4)))
	for col := 0; col < 2; col++ {
		part := plot.NewLegend()
		part.Top, part.Left, part.ThumbnailWidth = true, true, vg.Points(36)
		for _, e := range entries[min(len(entries), col*rows):min(len(entries), (col+1)*rows)] {
			part.Add(e.name, e.thumbs...)
		}
		area := draw.Crop(dc, vg.Points(48)+vg.Length(col)*width/2, -(width/2)*vg.Length(1-col), 0, -(plotHeight + vg.Points(4)))
		part.Draw(area)
	}
	return writePNG(file, img)
}

// writePNG writes img to file atomically: an existing plot is never left half-written.
func writePNG(file string, img *vgimg.Canvas) error {
	if err := data.WriteFileAtomic(file, func(w io.Writer) error {
		_, err := (vgimg.PngCanvas{Canvas: img}).WriteTo(w)
		return err
	}); err != nil {
		return fmt.Errorf("--plot %s: %w", file, err)
	}
	return nil
}

// logEnds widens [lo, hi] to the nearest 1-2-5 values, so that both ends of a logarithmic
// axis carry a labelled tick.
func logEnds(lo, hi float64) (float64, float64) {
	snap := func(v float64, up bool) float64 {
		e := math.Floor(math.Log10(v))
		for _, m := range []float64{1, 2, 5, 10} {
			c := m * math.Pow(10, e)
			if up && c >= v*(1-1e-12) {
				return c
			}
		}
		for _, m := range []float64{5, 2, 1} {
			if c := m * math.Pow(10, e); c <= v*(1+1e-12) {
				return c
			}
		}
		return math.Pow(10, e)
	}
	return snap(lo, false), snap(hi, true)
}

// roundTicks labels a linear axis from 0 at multiples of 1, 2 or 5 times a power of ten,
// four to eight labels over the range.
type roundTicks struct{}

// Ticks implements plot.Ticker.
func (roundTicks) Ticks(lo, hi float64) []plot.Tick {
	if !(hi > lo) {
		return plot.DefaultTicks{}.Ticks(lo, hi)
	}
	step := math.Pow(10, math.Floor(math.Log10((hi-lo)/4)))
	for _, m := range []float64{1, 2, 5, 10} {
		if (hi-lo)/(m*step) <= 8 {
			step *= m
			break
		}
	}
	var ticks []plot.Tick
	for v := math.Ceil(lo/step) * step; v <= hi*(1+1e-12); v += step {
		ticks = append(ticks, plot.Tick{Value: v, Label: strconv.FormatFloat(v, 'f', -1, 64)})
		for m := 1; m < 5; m++ { // unlabelled minor ticks
			if u := v + float64(m)*step/5; u < hi {
				ticks = append(ticks, plot.Tick{Value: u})
			}
		}
	}
	return ticks
}

// logTicks125 labels a logarithmic axis at 1, 2 and 5 times the powers of ten when the range
// spans at most three decades, and at the powers of ten (with unlabelled minor ticks) beyond;
// evenly spaced ticks when that would leave fewer than three labels.
type logTicks125 struct{}

// Ticks implements plot.Ticker.
func (logTicks125) Ticks(lo, hi float64) []plot.Tick {
	if !(lo > 0) || !(hi > lo) {
		return plot.LogTicks{Prec: -1}.Ticks(lo, hi)
	}
	e0, e1 := int(math.Floor(math.Log10(lo))), int(math.Ceil(math.Log10(hi)))
	dense := e1-e0 <= 3
	var ticks []plot.Tick
	for e := e0; e <= e1; e++ {
		for m := 1; m <= 9; m++ {
			v := float64(m) * math.Pow(10, float64(e))
			if v < lo*(1-1e-9) || v > hi*(1+1e-9) {
				continue
			}
			label := ""
			end := math.Abs(v-lo) <= 1e-9*lo || math.Abs(v-hi) <= 1e-9*hi
			if m == 1 || (dense && (m == 2 || m == 5)) || end {
				label = strconv.FormatFloat(v, 'g', -1, 64)
			}
			ticks = append(ticks, plot.Tick{Value: v, Label: label})
		}
	}
	labelled := 0
	for _, t := range ticks {
		if t.Label != "" {
			labelled++
		}
	}
	if labelled < 3 { // a narrow range: evenly spaced ticks read better, with labelled ends
		ticks = plot.DefaultTicks{}.Ticks(lo, hi)
		for _, end := range []float64{lo, hi} {
			if !slices.ContainsFunc(ticks, func(t plot.Tick) bool { return t.Label != "" && math.Abs(t.Value-end) <= 1e-9*end }) {
				ticks = append(ticks, plot.Tick{Value: end, Label: strconv.FormatFloat(end, 'g', 3, 64)})
			}
		}
	}
	return ticks
}
