package augment

import (
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
)

// Crops and flips of a tiny two-channel 3×3 image, padded by 1.
func TestApply(t *testing.T) {
	c := Config{CropPadding: 1, Flip: true, Shape: [3]int{2, 3, 3}}
	src := []float32{
		1, 2, 3,
		4, 5, 6,
		7, 8, 9,

		10, 20, 30,
		40, 50, 60,
		70, 80, 90,
	}
	for _, tc := range []struct {
		name string
		tr   Transform
		want []float32 // channel 0; channel 1 is 10× it
	}{
		{"identity", Transform{DY: 1, DX: 1}, []float32{1, 2, 3, 4, 5, 6, 7, 8, 9}},
		{"top-left of the padded image", Transform{DY: 0, DX: 0}, []float32{0, 0, 0, 0, 1, 2, 0, 4, 5}},
		{"bottom-right", Transform{DY: 2, DX: 2}, []float32{5, 6, 0, 8, 9, 0, 0, 0, 0}},
		{"top-right", Transform{DY: 0, DX: 2}, []float32{0, 0, 0, 2, 3, 0, 5, 6, 0}},
		{"flip", Transform{DY: 1, DX: 1, Flip: true}, []float32{3, 2, 1, 6, 5, 4, 9, 8, 7}},
		{"flip after a crop to the right", Transform{DY: 0, DX: 2, Flip: true}, []float32{0, 0, 0, 0, 3, 2, 0, 6, 5}},
		{"flip after a crop to the left", Transform{DY: 1, DX: 0, Flip: true}, []float32{2, 1, 0, 5, 4, 0, 8, 7, 0}},
	} {
		dst := make([]float32, len(src))
		for i := range dst {
			dst[i] = -1 // every value must be written
		}
		c.Apply(dst, src, tc.tr)
		want := slices.Clone(tc.want)
		for _, v := range tc.want {
			want = append(want, 10*v)
		}
		if !slices.Equal(dst, want) {
			t.Errorf("%s: got %v, want %v", tc.name, dst, want)
		}
	}
}

// Draw covers every offset and both flips, and nothing else.
func TestDraw(t *testing.T) {
	c := Config{CropPadding: 2, Flip: true, Shape: [3]int{1, 8, 8}}
	r := rand.New(rand.NewPCG(1, 2))
	seen := map[Transform]int{}
	for range 20000 {
		tr := c.Draw(r)
		if tr.DY < 0 || tr.DY > 4 || tr.DX < 0 || tr.DX > 4 {
			t.Fatalf("offset %+v outside {0..4}²", tr)
		}
		seen[tr]++
	}
	if len(seen) != 5*5*2 {
		t.Errorf("%d distinct transforms, want 50", len(seen))
	}
	for tr, n := range seen {
		if n < 250 { // expected 400
			t.Errorf("transform %+v drawn %d times in 20000", tr, n)
		}
	}
	if got := (Config{Shape: [3]int{1, 8, 8}}).Draw(r); got != (Transform{}) {
		t.Errorf("no crops, no flips: drew %+v, want the identity", got)
	}
}

func TestConfigCheck(t *testing.T) {
	img := [3]int{1, 28, 28}
	for _, tc := range []struct {
		c    Config
		want string // "" for valid
	}{
		{Config{Multiplicity: 4, CropPadding: 4, Flip: true, Shape: img}, ""},
		{Config{Multiplicity: 0, CropPadding: 4, Shape: img}, ""},
		{Config{Multiplicity: 1, Shape: img}, ""},
		{Config{Multiplicity: 2, Flip: true, Shape: img}, ""},
		{Config{Multiplicity: MaxMultiplicity, CropPadding: 14, Shape: img}, ""},
		{Config{Multiplicity: -1, Flip: true, Shape: img}, "data.augment.multiplicity = -1"},
		{Config{Multiplicity: MaxMultiplicity + 1, Flip: true, Shape: img}, "want 1 to 64"},
		{Config{Multiplicity: 2, Shape: img}, "the copies would be identical"},
		{Config{Multiplicity: 2, CropPadding: -1, Shape: img}, "data.augment.crop_padding = -1"},
		{Config{Multiplicity: 2, CropPadding: 15, Shape: img}, "want 0 to 14"},
		{Config{Multiplicity: 2, Flip: true, Shape: [3]int{0, 20, 1}}, "must be images"},
		{Config{Multiplicity: 2, Views: 2, Shape: [3]int{81, 7, 7}}, ""},
		{Config{Multiplicity: 1, Views: 18, CropPadding: 1, Flip: true, Shape: [3]int{81, 7, 7}}, ""},
		{Config{Multiplicity: 2, Views: 1, Shape: [3]int{81, 7, 7}}, "1 views of every example"},
		{Config{Multiplicity: 2, Views: MaxViews + 1, Shape: [3]int{81, 7, 7}}, "want 2 to 50"},
		{Config{Multiplicity: MaxMultiplicity + 1, Views: 2, Shape: [3]int{81, 7, 7}}, "want 1 to 64"},
		{Config{Multiplicity: 2, Views: 2, Shape: [3]int{81, 0, 7}}, "must have a shape"},
	} {
		err := tc.c.Check()
		switch {
		case tc.want == "" && err != nil:
			t.Errorf("%+v: %v", tc.c, err)
		case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
			t.Errorf("%+v: error %v, want one containing %q", tc.c, err, tc.want)
		}
	}
}

// ViewTransforms lists every transform Draw can draw, once each, the identity first.
func TestViewTransforms(t *testing.T) {
	img := [3]int{1, 8, 8}
	for _, tc := range []struct {
		c    Config
		want int
	}{
		{Config{Flip: true, Shape: img}, 2},
		{Config{CropPadding: 1, Shape: img}, 9},
		{Config{CropPadding: 1, Flip: true, Shape: img}, 18},
		{Config{CropPadding: 2, Flip: true, Shape: img}, 50},
		{Config{Shape: img}, 1},
	} {
		views := tc.c.ViewTransforms()
		if len(views) != tc.want {
			t.Errorf("%+v: %d views, want %d", tc.c, len(views), tc.want)
		}
		p := tc.c.CropPadding
		if views[0] != (Transform{DY: p, DX: p}) {
			t.Errorf("%+v: view 0 is %+v, want the identity", tc.c, views[0])
		}
		seen := map[Transform]bool{}
		for _, v := range views {
			if seen[v] {
				t.Errorf("%+v: view %+v twice", tc.c, v)
			}
			seen[v] = true
		}
		r := rand.New(rand.NewPCG(5, 6))
		for range 2000 {
			if d := tc.c.Draw(r); !seen[d] {
				t.Fatalf("%+v: Draw gave %+v, not among the views", tc.c, d)
			}
		}
	}
}
