package plot

import (
	"image"
	"image/color"
	"image/png"
	"os"
	"path/filepath"
	"testing"

	bound "github.com/dptrain/dptrain/accounting/audit"
	"github.com/dptrain/dptrain/train/audit"
)

// The audit plot keeps its legend (and everything else) off the image's edges: the legend used
// to be drawn against the right edge, its swatches cut off.
func TestAuditPlotLeavesTheEdgesClear(t *testing.T) {
	r := &audit.Report{
		Threat: audit.Threat("all-iterates"), Canaries: 100,
		Bound: bound.Result{Epsilon: 0.5, Confidence: 0.95, Delta: 1e-5},
		Modes: []audit.Verdict{
			{Mode: "rdp", Label: "certified", Epsilon: 3.18},
			{Mode: "pld", Label: "certified", Epsilon: 2.67},
			{Mode: "gdp", Label: "approximate", Epsilon: 1.83},
		},
	}
	file := filepath.Join(t.TempDir(), "audit.png")
	if err := Audit(file, r); err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(file)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	img, err := png.Decode(f)
	if err != nil {
		t.Fatal(err)
	}
	for _, side := range []string{"right", "top", "left", "bottom"} {
		if x, y, ok := edgeInk(img, side, 4); ok {
			t.Errorf("the plot draws at its %s edge (pixel %d,%d): the legend or a label is cut off there", side, x, y)
		}
	}
}

// edgeInk reports the first pixel that is not white within band pixels of img's side (left,
// right, top or bottom).
func edgeInk(img image.Image, side string, band int) (x, y int, found bool) {
	b := img.Bounds()
	r := b
	switch side {
	case "left":
		r.Max.X = b.Min.X + band
	case "right":
		r.Min.X = b.Max.X - band
	case "top":
		r.Max.Y = b.Min.Y + band
	case "bottom":
		r.Min.Y = b.Max.Y - band
	}
	for y := r.Min.Y; y < r.Max.Y; y++ {
		for x := r.Min.X; x < r.Max.X; x++ {
			if c, _ := color.GrayModel.Convert(img.At(x, y)).(color.Gray); c.Y != 0xff {
				return x, y, true
			}
		}
	}
	return 0, 0, false
}
