package optim

import (
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"gonum.org/v1/gonum/stat/distuv"
)

// chi2Bounds returns the two-sided 1−2·tail interval of a χ² variable with dof degrees of
// freedom.
func chi2Bounds(dof int, tail float64) (lo, hi float64) {
	d := distuv.ChiSquared{K: float64(dof)}
	return d.Quantile(tail), d.Quantile(1 - tail)
}

func normalCDF(x float64) float64 { return 0.5 * math.Erfc(-x/math.Sqrt2) }

// TestGaussianDistribution checks the ziggurat sampler against the exact normal law: the sum of
// squares against χ² quantiles, the mean, the fourth moment, the KS distance to Φ, and the
// tail masses beyond the ziggurat's base strip (x > 3.4426, sampled by the slow path).
func TestGaussianDistribution(t *testing.T) {
	for _, tc := range []struct {
		name string
		n    int
		std  float64
	}{
		{"direct", 60001, 1},
		{"chunked", 3 << 20, 0.37},
	} {
		t.Run(tc.name, func(t *testing.T) {
			x := make([]float32, tc.n)
			NewSeededNoise(7).FillGaussian(x, tc.std)
			var s1, s2, s4 float64
			z := make([]float64, tc.n)
			for i, v := range x {
				z[i] = float64(v) / tc.std
				s1 += z[i]
				s2 += z[i] * z[i]
				s4 += z[i] * z[i] * z[i] * z[i]
			}
			n := float64(tc.n)
			lo, hi := chi2Bounds(tc.n, 1e-4)
			if s2 < lo || s2 > hi {
				t.Errorf("Σz² = %v outside χ²_%d interval [%v, %v]", s2, tc.n, lo, hi)
			}
			if m := s1 / n; math.Abs(m) > 4/math.Sqrt(n) {
				t.Errorf("mean %v, want |mean| < %v", m, 4/math.Sqrt(n))
			}
			// E z⁴ = 3, Var z⁴ = 96.
			if k := s4 / n; math.Abs(k-3) > 4*math.Sqrt(96/n) {
				t.Errorf("fourth moment %v, want 3 ± %v", k, 4*math.Sqrt(96/n))
			}
			slices.Sort(z)
			var ks float64
			for i, v := range z {
				f := normalCDF(v)
				ks = max(ks, math.Abs(f-float64(i)/n), math.Abs(float64(i+1)/n-f))
			}
			// Kolmogorov's distribution: P(√n·D > 1.95) ≈ 0.001.
			if ks*math.Sqrt(n) > 1.95 {
				t.Errorf("KS distance %v: √n·D = %v > 1.95", ks, ks*math.Sqrt(n))
			}
			if tc.n < 1<<20 {
				return
			}
			for _, edge := range []float64{zigR, 4} {
				p := 2 * normalCDF(-edge)
				var cnt float64
				for _, v := range z {
					if math.Abs(v) > edge {
						cnt++
					}
				}
				if sd := math.Sqrt(n * p * (1 - p)); math.Abs(cnt-n*p) > 5*sd {
					t.Errorf("%v samples beyond ±%v, want %v ± %v", cnt, edge, n*p, 5*sd)
				}
			}
		})
	}
}

func TestNoiseReproducibility(t *testing.T) {
	fill := func(n *Noise, workers, size int) []float32 {
		n.workers = workers
		x := make([]float32, size)
		n.AddGaussian(x, 1)
		return x
	}
	const size = 5*chunkSize + 17
	a := fill(NewSeededNoise(1), 1, size)
	b := fill(NewSeededNoise(1), 3, size)
	if !slices.Equal(a, b) {
		t.Error("same seed, different worker counts: outputs differ")
	}
	c := fill(NewSeededNoise(2), 2, size)
	if slices.Equal(a, c) {
		t.Error("different seeds gave the same noise")
	}
	if !NewSeededNoise(1).Reproducible() {
		t.Error("seeded noise does not report Reproducible")
	}

	parent := NewSeededNoise(3)
	child := parent.Split()
	if !child.Reproducible() {
		t.Error("child of a seeded generator does not report Reproducible")
	}
	if slices.Equal(fill(parent, 1, 1000), fill(child, 1, 1000)) {
		t.Error("Split child repeats the parent's stream")
	}

	s1, err := NewNoise()
	if err != nil {
		t.Fatal(err)
	}
	s2, err := NewNoise()
	if err != nil {
		t.Fatal(err)
	}
	if s1.Reproducible() {
		t.Error("crypto-seeded noise reports Reproducible")
	}
	if slices.Equal(fill(s1, 1, 64), fill(s2, 1, 64)) {
		t.Error("two crypto-seeded generators gave the same noise")
	}
	var _ *rand.Rand = s1.Rand()
}

func TestAddGaussianArguments(t *testing.T) {
	x := []float32{1, 2, 3}
	NewSeededNoise(1).AddGaussian(x, 0)
	if !slices.Equal(x, []float32{1, 2, 3}) {
		t.Errorf("std 0 changed the vector: %v", x)
	}
	for _, std := range []float64{-1, math.NaN(), math.Inf(1)} {
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("std %v did not panic", std)
				}
			}()
			NewSeededNoise(1).AddGaussian(x, std)
		}()
	}
}

// BenchmarkAddGaussian1M measures noise generation for a 1M-parameter model (ns per float).
func BenchmarkAddGaussian1M(b *testing.B) {
	x := make([]float32, 1<<20)
	n := NewSeededNoise(1)
	for b.Loop() {
		n.AddGaussian(x, 1)
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(len(x)), "ns/float")
}

// BenchmarkAddGaussian1MOneWorker is the same on one goroutine.
func BenchmarkAddGaussian1MOneWorker(b *testing.B) {
	x := make([]float32, 1<<20)
	n := NewSeededNoise(1)
	n.workers = 1
	for b.Loop() {
		n.AddGaussian(x, 1)
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(len(x)), "ns/float")
}

// BenchmarkNormFloat64Baseline is math/rand/v2's NormFloat64 on ChaCha8, for comparison.
func BenchmarkNormFloat64Baseline(b *testing.B) {
	x := make([]float32, 1<<20)
	r := NewSeededNoise(1).Rand()
	for b.Loop() {
		for i := range x {
			x[i] += float32(r.NormFloat64())
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(len(x)), "ns/float")
}

// TestNoiseMarshalResumes saves a seeded stream mid-way (with a partly consumed Read buffer)
// and checks that restored copies continue exactly as the original does: Gaussian vectors on
// both the serial and the chunked parallel path, mixing weights and bytes.
func TestNoiseMarshalResumes(t *testing.T) {
	draw := func(n *Noise) ([]float32, []float32, []float64, []byte) {
		small := make([]float32, 37)
		n.AddGaussian(small, 1)
		large := make([]float32, 2*chunkSize+5)
		n.AddGaussian(large, 2)
		u := make([]float64, 9)
		for i := range u {
			u[i] = n.Rand().Float64()
		}
		b := make([]byte, 11)
		_, _ = n.src.Read(b)
		return small, large, u, b
	}
	orig := NewSeededNoise(5)
	orig.FillGaussian(make([]float32, 100), 1)
	_, _ = orig.src.Read(make([]byte, 3)) // leaves 5 buffered bytes, which must be saved too
	saved, err := orig.MarshalBinary()
	if err != nil {
		t.Fatal(err)
	}

	var fresh Noise // a zero Noise
	if err := fresh.UnmarshalBinary(saved); err != nil {
		t.Fatal(err)
	}
	existing := NewSeededNoise(99) // an in-use Noise whose Rand view was handed out before
	view := existing.Rand()
	if err := existing.UnmarshalBinary(saved); err != nil {
		t.Fatal(err)
	}
	if !fresh.Reproducible() || !existing.Reproducible() {
		t.Error("a restored stream does not report Reproducible")
	}
	ws, wl, wu, wb := draw(orig)
	for name, n := range map[string]*Noise{"zero Noise": &fresh, "existing Noise": existing} {
		s, l, u, b := draw(n)
		if !slices.Equal(s, ws) || !slices.Equal(l, wl) || !slices.Equal(u, wu) || !slices.Equal(b, wb) {
			t.Errorf("%s: the restored stream does not continue the saved one", name)
		}
	}
	// The view taken before UnmarshalBinary follows the restored stream.
	if err := existing.UnmarshalBinary(saved); err != nil {
		t.Fatal(err)
	}
	ref := new(Noise)
	_ = ref.UnmarshalBinary(saved)
	if view.Uint64() != ref.Rand().Uint64() {
		t.Error("a Rand obtained before UnmarshalBinary does not follow the restored stream")
	}

	secure, err := NewNoise()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := secure.MarshalBinary(); err == nil || !strings.Contains(err.Error(), "secure") {
		t.Errorf("saving a secure stream: error %v, want a refusal", err)
	}
	for _, bad := range [][]byte{nil, []byte("chacha8:0123"), saved[:len(saved)-4]} {
		var n Noise
		if err := n.UnmarshalBinary(bad); err == nil {
			t.Errorf("UnmarshalBinary(%q) accepted", bad)
		}
	}
}

// TestAddGaussianScaled checks that the fused pass equals AddGaussian followed by scaleFinite
// bit for bit, whatever the number of workers (1 to 4), on the serial and the chunked path,
// and that it reports non-finite results.
func TestAddGaussianScaled(t *testing.T) {
	nan, inf := float32(math.NaN()), float32(math.Inf(1))
	for _, tc := range []struct {
		name       string
		size       int
		std, scale float64
		poison     float32 // written at size/2 when not 0
		finite     bool
	}{
		{"serial", 1001, 0.7, 1.0 / 256, 0, true},
		{"chunked", 3*chunkSize + 5, 1.3, 1.0 / 2048, 0, true},
		{"no noise", 3*chunkSize + 5, 0, 0.25, 0, true},
		{"NaN", 2*chunkSize + 1, 1, 0.5, nan, false},
		{"Inf", 999, 1, 0.5, inf, false},
		{"overflow", 999, 1, math.MaxFloat32, 0, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			base := make([]float32, tc.size)
			for i := range base {
				base[i] = float32(i%17) - 8
			}
			if tc.poison != 0 {
				base[tc.size/2] = tc.poison
			}
			want := slices.Clone(base)
			ref := NewSeededNoise(5)
			ref.AddGaussian(want, tc.std)
			wantErr := scaleFinite(want, tc.scale)
			if (wantErr == nil) != tc.finite {
				t.Fatalf("reference: scaleFinite error %v, want finite %v", wantErr, tc.finite)
			}
			next := ref.Rand().Uint64()
			for workers := 1; workers <= 4; workers++ {
				got := slices.Clone(base)
				n := NewSeededNoise(5)
				n.workers = workers
				if ok := n.AddGaussianScaled(got, tc.std, tc.scale); ok != tc.finite {
					t.Errorf("%d workers: finite %v, want %v", workers, ok, tc.finite)
				}
				if !slices.EqualFunc(got, want, func(a, b float32) bool { return math.Float32bits(a) == math.Float32bits(b) }) {
					t.Errorf("%d workers: fused result differs from AddGaussian + scaleFinite", workers)
				}
				// The stream goes on where the reference's does.
				if n.Rand().Uint64() != next {
					t.Errorf("%d workers: stream position differs after the call", workers)
				}
			}
		})
	}
}

// BenchmarkAddGaussianScaled400k is the DP step's noise for a 400k-parameter model (the MLP).
func BenchmarkAddGaussianScaled400k(b *testing.B) {
	x := make([]float32, 407050)
	n := NewSeededNoise(1)
	for b.Loop() {
		n.AddGaussianScaled(x, 1, 1.0/256)
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(len(x)), "ns/float")
}

// TestGaussianFineBins is a χ² goodness-of-fit test on 1000 equiprobable bins of the normal law
// over 4·10⁶ samples, fine enough to resolve the ziggurat's individual layers (128 of equal
// area): a layer drawn too often or too rarely, or a wedge or tail accepted at the wrong rate,
// shifts mass between neighbouring bins. (Marsaglia & Tsang's layer/low-bit correlation, which
// ziggurat.go removes, is too fine for it: the old sampler passed too.)
func TestGaussianFineBins(t *testing.T) {
	const (
		n    = 4 << 20
		bins = 1000
	)
	x := make([]float32, n)
	NewSeededNoise(11).FillGaussian(x, 1)
	var count [bins]float64
	for _, v := range x {
		b := int(normalCDF(float64(v)) * bins)
		count[min(max(b, 0), bins-1)]++
	}
	var chi2 float64
	e := float64(n) / bins
	for _, c := range count {
		chi2 += (c - e) * (c - e) / e
	}
	lo, hi := chi2Bounds(bins-1, 1e-4)
	if chi2 < lo || chi2 > hi {
		t.Errorf("χ² over %d bins = %v, outside [%v, %v]", bins, chi2, lo, hi)
	}
}

// TestZigguratTables checks that the layer recursion closes: the top layer, from x_1 to 0 under
// e^(−x²/2), has the area v of every other layer, and that the rectangle test alone accepts
// 98.5% of the words.
func TestZigguratTables(t *testing.T) {
	f := func(x float64) float64 { return math.Exp(-0.5 * x * x) }
	x1 := zig.w[1] * zigM
	if top := x1 * (1 - f(x1)); math.Abs(top-zigV) > 1e-12 {
		t.Errorf("top layer area %v, want v = %v", top, zigV)
	}
	if v := zigR*f(zigR) + math.Sqrt(math.Pi/2)*math.Erfc(zigR/math.Sqrt2); math.Abs(v-zigV) > 1e-15 {
		t.Errorf("v = %v, but r·f(r) + tail = %v", zigV, v)
	}
	var fast float64
	for _, k := range zig.k {
		fast += float64(k) / zigM
	}
	if fast /= zigLayers; fast < 0.985 {
		t.Errorf("rectangle test accepts %.4f of words, want ≥ 0.985", fast)
	}
}
