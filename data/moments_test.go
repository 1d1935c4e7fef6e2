package data

import (
	"math"
	"math/rand/v2"
	"strings"
	"testing"
)

// momentsSplit returns n examples of channels×per values drawn from rng, scaled by scale.
func momentsSplit(rng *rand.Rand, n, channels, per int, scale float64) *Split {
	d := channels * per
	s := &Split{X: make([]float32, n*d), Y: make([]int32, n), N: n, D: d}
	for i := range s.X {
		s.X[i] = float32(scale * rng.NormFloat64())
	}
	return s
}

func l2diff(a, b []float64) float64 {
	var ss float64
	for i := range a {
		ss += (a[i] - b[i]) * (a[i] - b[i])
	}
	return math.Sqrt(ss)
}

// Without clipping the sums are the plain per-channel means and mean squares summed.
func TestChannelMomentsExact(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	s := momentsSplit(rng, 50, 3, 4, 2)
	m, err := s.ChannelMoments(3, 0)
	if err != nil {
		t.Fatal(err)
	}
	for c := range 3 {
		var want1, want2 float64
		for i := range s.N {
			var a, b float64
			for _, v := range s.Row(i)[c*4 : (c+1)*4] {
				a += float64(v)
				b += float64(v) * float64(v)
			}
			want1 += a / 4
			want2 += b / 4
		}
		if math.Abs(m.Mean[c]-want1) > 1e-12*math.Max(1, math.Abs(want1)) || math.Abs(m.Square[c]-want2) > 1e-12*want2 {
			t.Errorf("channel %d: sums %v, %v, want %v, %v", c, m.Mean[c], m.Square[c], want1, want2)
		}
	}
	mean, std, err := m.Standardization(float64(s.N))
	if err != nil {
		t.Fatal(err)
	}
	for c := range 3 {
		v := m.Square[c]/50 - mean[c]*mean[c]
		if want := math.Sqrt(v + 1e-5); math.Abs(std[c]-want) > 1e-12 {
			t.Errorf("channel %d: std %v, want %v", c, std[c], want)
		}
	}
}

// The neighbouring-dataset property the data normalisation's release rests on: removing any
// one example, crafted or random, at any position, moves each clipped sum by at most Clip in
// l2 norm; an example holding a NaN or an infinity contributes nothing and is counted.
func TestChannelMomentsNeighbours(t *testing.T) {
	const channels, per, clip = 5, 9, 0.75
	rng := rand.New(rand.NewPCG(3, 4))
	crafted := map[string]func(row []float32){
		"random":  func(row []float32) {},
		"huge":    func(row []float32) { row[0] = 3e38 },
		"one-hot": func(row []float32) { clear(row); row[per] = 1e6 },
		"zero":    func(row []float32) { clear(row) },
		"negative": func(row []float32) {
			for j := range row {
				row[j] = -1e4
			}
		},
		"nan":      func(row []float32) { row[per+1] = float32(math.NaN()) },
		"infinite": func(row []float32) { row[2*per] = float32(math.Inf(-1)) },
		"subnormal": func(row []float32) {
			for j := range row {
				row[j] = math.SmallestNonzeroFloat32
			}
		},
	}
	for name, craft := range crafted {
		for _, pos := range []int{0, 17, 39} {
			d := momentsSplit(rng, 40, channels, per, 3)
			craft(d.Row(pos))
			full, err := d.ChannelMoments(channels, clip)
			if err != nil {
				t.Fatal(err)
			}
			less := &Split{X: append(append([]float32(nil), d.X[:pos*d.D]...), d.X[(pos+1)*d.D:]...), N: d.N - 1, D: d.D}
			nb, err := less.ChannelMoments(channels, clip)
			if err != nil {
				t.Fatal(err)
			}
			for _, p := range []struct {
				what string
				a, b []float64
			}{{"mean", full.Mean, nb.Mean}, {"square", full.Square, nb.Square}} {
				if g := l2diff(p.a, p.b); g > clip*(1+1e-12) || math.IsNaN(g) {
					t.Errorf("%s example at %d: removing it moves the %s sum by %v > clip %v", name, pos, p.what, g, clip)
				}
			}
			wantBad := 0
			if name == "nan" || name == "infinite" {
				wantBad = 1
				if g := l2diff(full.Mean, nb.Mean); g != 0 {
					t.Errorf("%s example: contributes %v to the mean sum, want nothing", name, g)
				}
			}
			if full.NonFinite != wantBad || nb.NonFinite != 0 {
				t.Errorf("%s example: NonFinite = %d and %d without it, want %d and 0", name, full.NonFinite, nb.NonFinite, wantBad)
			}
		}
	}
}

func TestChannelMomentsRefuses(t *testing.T) {
	s := momentsSplit(rand.New(rand.NewPCG(5, 6)), 4, 3, 4, 1)
	for _, tc := range []struct {
		name     string
		split    *Split
		channels int
		clip     float64
		want     string
	}{
		{"empty", &Split{D: 12}, 3, 1, "empty split"},
		{"channels", s, 5, 1, "do not divide"},
		{"zero channels", s, 0, 1, "do not divide"},
		{"negative clip", s, 3, -1, "clip"},
		{"NaN clip", s, 3, math.NaN(), "clip"},
		{"infinite clip", s, 3, math.Inf(1), "clip"},
	} {
		if _, err := tc.split.ChannelMoments(tc.channels, tc.clip); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: error %v, want one naming %q", tc.name, err, tc.want)
		}
	}
	m, err := s.ChannelMoments(3, 1)
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := m.Standardization(0); err == nil {
		t.Error("standardization over 0 examples: no error")
	}
}
