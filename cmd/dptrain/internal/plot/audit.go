package plot

import (
	"fmt"
	"image/color"

	"github.com/dptrain/dptrain/train/audit"
	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgimg"
)

// Audit writes a PNG: the ε of every accountant that gave one as a bar (labelled with its
// mode and label), and the audit's ε_lower as a horizontal line across them.
func Audit(file string, r *audit.Report) error {
	p := plot.New()
	b := r.Bound
	p.Title.Text = fmt.Sprintf("%s audit, %d canaries: ε_lower = %.3g at %g%% (δ = %g)", r.Threat, r.Canaries, b.Epsilon, 100*b.Confidence, b.Delta)
	p.Y.Label.Text = "ε"
	var vals plotter.Values
	var names []string
	for _, v := range r.Modes {
		if v.Error != "" {
			continue
		}
		vals = append(vals, v.Epsilon)
		names = append(names, fmt.Sprintf("%s (%s)", v.Mode, v.Label))
	}
	// Inside the axes' top right corner, clear of the frame and of the image's edge.
	p.Legend.Top = true
	p.Legend.XOffs, p.Legend.YOffs = -vg.Points(8), -vg.Points(6)
	if len(vals) > 0 {
		bars, err := plotter.NewBarChart(vals, vg.Points(40))
		if err != nil {
			return fmt.Errorf("--plot: %w", err)
		}
		bars.Color = color.RGBA{31, 119, 180, 255}
		bars.LineStyle.Width = 0
		p.Add(bars)
		p.Legend.Add("reported ε", bars)
		p.NominalX(names...)
	}
	n := float64(max(len(vals), 1))
	line, err := plotter.NewLine(plotter.XYs{{X: -0.5, Y: b.Epsilon}, {X: n - 0.5, Y: b.Epsilon}})
	if err != nil {
		return fmt.Errorf("--plot: %w", err)
	}
	line.Color = color.RGBA{214, 39, 40, 255}
	line.Width = vg.Points(2)
	line.Dashes = []vg.Length{vg.Points(6), vg.Points(3)}
	p.Add(line)
	p.Legend.Add(fmt.Sprintf("ε_lower %.3g", b.Epsilon), line)
	top := b.Epsilon
	for _, v := range vals {
		top = max(top, v)
	}
	p.Y.Min, p.Y.Max = 0, 1.3*max(top, 0.1) // room for the legend
	p.Add(plotter.NewGrid())
	p.BackgroundColor = color.White
	img := vgimg.New(7*vg.Inch, 4.5*vg.Inch)
	dc := draw.New(img)
	dc.SetColor(color.White)
	dc.Fill(dc.Rectangle.Path())
	// A margin keeps the title, the axes and the legend off the image's edges.
	const margin = vg.Length(10)
	p.Draw(draw.Crop(dc, margin, -margin, margin, -margin))
	return writePNG(file, img)
}
