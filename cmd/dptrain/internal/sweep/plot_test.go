package sweep

import (
	"bytes"
	"image"
	"image/color"
	"image/png"
	"reflect"
	"strconv"
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

// renderAccuracy draws the accuracy plot of groups (one mode, rdp) and decodes it.
func renderAccuracy(t *testing.T, groups ...Group) image.Image {
	t.Helper()
	r := &Results{Suite: "test", Groups: groups}
	var buf bytes.Buffer
	if err := r.PlotAccuracyEpsilon(&buf); err != nil {
		t.Fatal(err)
	}
	img, err := png.Decode(&buf)
	if err != nil {
		t.Fatal(err)
	}
	return img
}

func plotGroup(name string, acc, std, eps float64) Group {
	return Group{Labels: []Label{{Axis: "algorithm", Value: name}}, Seeds: 2, Cells: 2, AccuracyMean: acc, AccuracyStd: std,
		Epsilon: []train.ModeEpsilon{{Mode: "rdp", Label: "certified", Epsilon: eps}}}
}

// inkOf returns how many pixels of img have exactly colour c, and the lowest row that has one
// (the bottom of the group's error bar: the legend's swatches are above it).
func inkOf(img image.Image, c color.RGBA) (n int, row float64) {
	b := img.Bounds()
	for y := b.Min.Y; y < b.Max.Y; y++ {
		for x := b.Min.X; x < b.Max.X; x++ {
			if sameRGB(img.At(x, y), c) {
				n++
				row = max(row, float64(y))
			}
		}
	}
	return n, row
}

// The marker at the largest ε lies inside the axes' frame: the axis used to end on its centre,
// half of it hanging over the frame's end.
func TestAccuracyPlotDrawsTheRightmostMarkerWhole(t *testing.T) {
	img := renderAccuracy(t, plotGroup("a", 0.8, 0, 3), plotGroup("b", 0.7, 0, 1))
	frame := frameRight(img)
	// Group a's colour, up to a few pixels beyond the frame (the legend's swatches are further
	// right).
	marker := 0
	b := img.Bounds()
	for y := b.Min.Y; y < b.Max.Y; y++ {
		for x := b.Min.X; x < min(frame+12, b.Max.X); x++ {
			if sameRGB(img.At(x, y), palette[0]) {
				marker = max(marker, x)
			}
		}
	}
	if marker == 0 || marker >= frame {
		t.Errorf("the marker at the largest ε reaches column %d, the axes' frame ends at %d: it is cut by the frame's end", marker, frame)
	}
}

// frameRight is the right end of the axes' frame: the last column of the long grey horizontal
// lines (the grid and the x axis span the data area exactly).
func frameRight(img image.Image) int {
	b := img.Bounds()
	right := 0
	for y := b.Min.Y; y < b.Max.Y; y++ {
		run := 0
		for x := b.Min.X; x < b.Max.X; x++ {
			r, g, bl, _ := img.At(x, y).RGBA()
			if r != g || g != bl || r >= 0xff00 {
				run = 0
				continue
			}
			if run++; run > b.Dx()/3 {
				right = max(right, x)
			}
		}
	}
	return right
}

func sameRGB(px color.Color, c color.RGBA) bool {
	r, g, b, _ := px.RGBA()
	return uint8(r>>8) == c.R && uint8(g>>8) == c.G && uint8(b>>8) == c.B
}

// The points fill the plot's height: accuracies of 50% and 55% are drawn far apart, not in the
// bottom tenth of an axis that runs to 100%.
func TestAccuracyPlotFillsTheImage(t *testing.T) {
	img := renderAccuracy(t, plotGroup("a", 0.55, 0.005, 2), plotGroup("b", 0.50, 0.005, 3))
	na, ya := inkOf(img, palette[0])
	nb, yb := inkOf(img, palette[1])
	h := float64(img.Bounds().Dy())
	if na == 0 || nb == 0 || yb-ya < 0.4*h {
		t.Errorf("55%% and 50%% are drawn %.0f pixels apart in an image %.0f pixels tall (%d and %d pixels of ink): the plot leaves most of its height empty", yb-ya, h, na, nb)
	}
}

// Nothing is drawn against the image's edges, and a short legend does not keep a wide empty
// column: the legend's column is as wide as its text.
func TestSweepPlotsLeaveTheEdgesClearAndTheLegendTight(t *testing.T) {
	img := renderAccuracy(t, plotGroup("a", 0.55, 0.005, 2), plotGroup("b", 0.50, 0.005, 3))
	b := img.Bounds()
	right := b.Min.X
	for y := b.Min.Y; y < b.Max.Y; y++ {
		for x := b.Min.X; x < b.Max.X; x++ {
			if c, _ := color.GrayModel.Convert(img.At(x, y)).(color.Gray); c.Y != 0xff {
				if x < b.Min.X+4 || x >= b.Max.X-4 || y < b.Min.Y+4 || y >= b.Max.Y-4 {
					t.Fatalf("pixel %d,%d on the image's edge is drawn on: something is cut off", x, y)
				}
				right = max(right, x)
			}
		}
	}
	if empty := float64(b.Max.X-1-right) / float64(b.Dx()); empty > 0.05 {
		t.Errorf("the rightmost %.0f%% of the image is empty: the legend's column is wider than its text", 100*empty)
	}
}

// Each algorithm of a suite with an ε axis is one line of accuracy against ε: the groups that
// differ only on EpsilonAxis form one series, drawn in one colour with its points joined.
func TestAccuracyPlotJoinsAnAlgorithmAcrossItsTargetEpsilon(t *testing.T) {
	grid := func(axis string) []Group {
		var gs []Group
		for i, alg := range []string{"a", "b"} {
			for j, eps := range []float64{1, 3, 8} {
				gs = append(gs, Group{Labels: []Label{{Axis: "algorithm", Value: alg}, {Axis: axis, Value: strconv.FormatFloat(eps, 'g', -1, 64)}},
					Seeds: 3, Cells: 3, AccuracyMean: 0.5 + 0.1*float64(i) + 0.05*float64(j), AccuracyStd: 0.01,
					Epsilon: []train.ModeEpsilon{{Mode: "rdp", Label: "certified", Epsilon: eps}}})
			}
		}
		return gs
	}
	joined := &Results{Suite: "test", Groups: grid(EpsilonAxis)}
	if got, want := joined.accuracySeries(), [][]int{{0, 1, 2}, {3, 4, 5}}; !reflect.DeepEqual(got, want) {
		t.Errorf("series %v, want %v (one per algorithm)", got, want)
	}
	apart := &Results{Suite: "test", Groups: grid("target")}
	if got := apart.accuracySeries(); len(got) != 6 {
		t.Errorf("without an ε axis: %d series, want one per group (6)", len(got))
	}
	// The joined plot draws algorithm a's three points in one colour, and the line between them
	// adds ink of that colour; drawn apart, each group has a colour of its own.
	nJoined, _ := inkOf(renderAccuracy(t, joined.Groups...), palette[0])
	nApart, _ := inkOf(renderAccuracy(t, apart.Groups...), palette[0])
	if nJoined < 3*nApart {
		t.Errorf("algorithm a's colour covers %d pixels joined and %d for one group apart: want its three points and the line between them", nJoined, nApart)
	}
}
