package main

import (
	"errors"
	"fmt"
	"image/color"
	"io"
	"math"
	"strconv"

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

var modeDashes = [][]vg.Length{
	nil, {vg.Points(6), vg.Points(2)}, {vg.Points(2), vg.Points(2)}, {vg.Points(8), vg.Points(2), vg.Points(2), vg.Points(2)},
}

// offScaleRatio is how far above the smallest final ε a mode's curve may reach and still be
// drawn; higher modes (output perturbation, bounds without subsampling amplification) are
// listed in the legend with their final ε instead of squashing every other curve.
const offScaleRatio = 1000

// plotCompare writes ε against steps as a PNG: one labelled curve per applicable mode, the
// legend (mode, label, final ε) beside the axes, the y axis logarithmic when every ε is positive.
func plotCompare(file, title string, r compareReport) error {
	p := plot.New()
	p.Title.Text = title
	if title == "" {
		p.Title.Text = fmt.Sprintf("ε (δ = %g) against steps", r.Delta)
	}
	p.X.Label.Text = "steps"
	p.Y.Label.Text = fmt.Sprintf("ε (δ = %g)", r.Delta)
	positive, low := true, math.Inf(1)
	for _, row := range r.Modes {
		if !row.Applicable || len(row.curve) == 0 {
			continue
		}
		for _, pt := range row.curve {
			positive = positive && pt.Epsilon > 0
		}
		low = math.Min(low, row.curve[len(row.curve)-1].Epsilon)
	}
	if positive {
		p.Y.Scale = plot.LogScale{}
		p.Y.Tick.Marker = logTicks125{}
	}
	legend := plot.NewLegend()
	legend.Top, legend.Left = true, true
	curves := 0
	for i, row := range r.Modes {
		if !row.Applicable || len(row.curve) == 0 {
			continue
		}
		xy := make(plotter.XYs, len(row.curve))
		top := 0.0
		for j, pt := range row.curve {
			xy[j].X, xy[j].Y = float64(pt.Steps), pt.Epsilon
			top = math.Max(top, pt.Epsilon)
		}
		line, err := plotter.NewLine(xy)
		if err != nil {
			return fmt.Errorf("plot %s: %w", row.Mode, err)
		}
		line.Color = modePalette[i%len(modePalette)]
		line.Dashes = modeDashes[(i/len(modePalette)+i)%len(modeDashes)]
		line.Width = vg.Points(1.8)
		final := strconv.FormatFloat(row.curve[len(row.curve)-1].Epsilon, 'g', 4, 64)
		name := fmt.Sprintf("%s (%s): %s", row.Mode, row.Label, final)
		if positive && top > offScaleRatio*low {
			name += ", off scale"
		} else {
			p.Add(line)
			curves++
		}
		legend.Add(name, line)
	}
	if curves == 0 {
		return errors.New("--plot: no applicable mode to plot")
	}
	if b := r.Best; b != nil && len(b.curve) > 0 {
		xy := make(plotter.XYs, len(b.curve))
		for j, pt := range b.curve {
			xy[j].X, xy[j].Y = float64(pt.Steps), pt.Epsilon
		}
		line, err := plotter.NewLine(xy)
		if err != nil {
			return fmt.Errorf("plot best: %w", err)
		}
		line.Color = color.Black
		line.Dashes = []vg.Length{vg.Points(1), vg.Points(3)}
		line.Width = vg.Points(3)
		p.Add(line)
		legend.Add(fmt.Sprintf("best certified (pointwise minimum): %s", strconv.FormatFloat(b.curve[len(b.curve)-1].Epsilon, 'g', 4, 64)), line)
	}
	p.Add(plotter.NewGrid())
	p.BackgroundColor = color.White

	const width, height, legendWidth = 12 * vg.Inch, 5.5 * vg.Inch, 4.4 * vg.Inch
	img := vgimg.New(width, height)
	dc := draw.New(img)
	dc.SetColor(color.White)
	dc.Fill(dc.Rectangle.Path())
	p.Draw(draw.Crop(dc, 0, -legendWidth, 0, 0))
	legend.Draw(draw.Crop(draw.Crop(dc, width-legendWidth, 0, 0, 0), vg.Points(8), 0, 0, -vg.Points(30)))
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
			if m == 1 || (dense && (m == 2 || m == 5)) {
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
	if labelled < 3 { // a narrow range: evenly spaced ticks read better
		return plot.DefaultTicks{}.Ticks(lo, hi)
	}
	return ticks
}
