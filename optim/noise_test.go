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

// TestAddGaussianScaled checks that the fused pass equals AddGaussian followed by ScaleFinite
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
			wantErr := ScaleFinite(want, tc.scale)
			if (wantErr == nil) != tc.finite {
				t.Fatalf("reference: ScaleFinite error %v, want finite %v", wantErr, tc.finite)
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
					t.Errorf("%d workers: fused result differs from AddGaussian + ScaleFinite", workers)
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

// f32key maps float32 values to integers in the same order (−0 and +0 to 0).
func f32key(f float32) int64 {
	b := int64(math.Float32bits(f))
	if b&(1<<31) != 0 {
		return -(b &^ (1 << 31))
	}
	return b
}

func keyF32(k int64) float32 {
	if k < 0 {
		return math.Float32frombits(uint32(-k) | 1<<31)
	}
	return math.Float32frombits(uint32(k))
}

// preimage32 returns the float32 noise values n with v + n (in float32) equal to o, an interval
// [a, b] because the sum is monotone in n; ok is false when it is empty.
func preimage32(o, v float32) (a, b float32, ok bool) {
	const top = 0x7f7fffff // MaxFloat32's key
	// first key whose sum is ≥ o (resp. > o)
	search := func(above func(float32) bool) int64 {
		lo, hi := int64(-top), int64(top)+1
		for lo < hi {
			mid := lo + (hi-lo)/2
			if above(v + keyF32(mid)) {
				hi = mid
			} else {
				lo = mid + 1
			}
		}
		return lo
	}
	ka := search(func(s float32) bool { return s >= o })
	kb := search(func(s float32) bool { return s > o }) - 1
	if ka > kb {
		return 0, 0, false
	}
	return keyF32(ka), keyF32(kb), true
}

// lattice32 is the previous sampler's support below r·std: layer i's float32 noise values
// ±fl32(m·std·w_i), m < 2^23 (m < k_0 in the base layer, beyond which it drew the tail), with
// w_i and k_i the 23-bit tables, which are the 53-bit ones scaled by 2^30.
type lattice32 struct {
	std float64
	w   [zigLayers]float64 // w_i of the 23-bit tables
	sw  [zigLayers]float64 // std·w_i, as the fast path computed it
	k0  uint64
}

func newLattice32(std float64) *lattice32 {
	l := &lattice32{std: std, k0: zig.k[0] >> 30}
	for i, w := range zig.w {
		l.w[i] = w * (1 << 30)
		l.sw[i] = std * l.w[i]
	}
	return l
}

// sample draws the previous sampler's fast path from a 32-bit word (layer bits 0–7, sign bit
// 8, magnitude bits 9–31): its rectangle test alone, which is 98.5% of its samples.
func (l *lattice32) sample(u uint32) (float32, bool) {
	i, m := u&zigLayer, uint64(u>>9)
	if m >= zig.k[i]>>30 {
		return 0, false
	}
	x := float32(float64(m) * l.sw[i])
	if u&zigSign != 0 {
		x = -x
	}
	return x, true
}

// impossible reports whether the float32 output o cannot be v + n for any n in the previous
// sampler's support: certain, since it is decided only where the preimage lies below r·std,
// which the tail never reaches, and it checks every layer's lattice points there under both
// ways the sampler rounded them (the fast path's m·(std·w) and the slow path's std·(m·w)).
func (l *lattice32) impossible(o, v float32) (impossible, decided bool) {
	a, b, ok := preimage32(o, v)
	if !ok {
		return true, true
	}
	if a <= 0 && b >= 0 {
		return false, true // m = 0
	}
	lo, hi := float64(a), float64(b)
	if b < 0 {
		lo, hi = -hi, -lo
	}
	if hi >= 0.999*zigR*l.std {
		return false, false
	}
	for i := range zigLayers {
		mmax := uint64(1<<23 - 1)
		if i == 0 {
			mmax = l.k0 - 1
		}
		mlo := uint64(max(math.Floor(lo/l.sw[i])-2, 0))
		mhi := min(uint64(math.Ceil(hi/l.sw[i])+2), mmax)
		if mhi > mlo+4096 {
			return false, false // a wide preimage: not worth deciding
		}
		for m := mlo; m <= mhi; m++ {
			x1 := float64(float32(float64(m) * l.sw[i]))
			x2 := float64(float32(l.std * (float64(m) * l.w[i])))
			if (x1 >= lo && x1 <= hi) || (x2 >= lo && x2 <= hi) {
				return false, true
			}
		}
	}
	return true, true
}

// releaseWitness looks for a noise value n of the sampler's support (a base-layer lattice
// point, accepted by the rectangle test alone, or a tail value) with which input v releases o
// (scale 1), computing n and the release exactly as addNormal does. Finding one proves that o
// is possible under v.
func releaseWitness(o, v float32, std float64) bool {
	g := gridFor(std)
	release := func(x float64, neg bool) bool {
		if neg {
			x = math.Float64frombits(math.Float64bits(x) | 1<<63)
		}
		y := g.round(float64(v) + x)
		return math.Float32bits(float32(float64(float32(y))*1)) == math.Float32bits(o)
	}
	t := float64(o) - float64(v)
	z := math.Abs(t)
	sw0 := std * zig.w[0]
	m0 := math.Round(z / sw0)
	for dm := -3.0; dm <= 3; dm++ {
		m := m0 + dm
		if m < 0 || m >= float64(zig.k[0]) {
			continue
		}
		x := float64(m * sw0)
		if release(x, false) || release(x, true) {
			return true
		}
	}
	// The tail: |Z| = r + x with x = −ln(U)/r, U = unitFineValue(e, m); every e ≤ 960 and
	// m < 2^51 has positive probability, and the acceptance test 2·(−ln U₂) ≥ x² can pass
	// for x up to 36.
	xt := z/std - zigR
	if xt <= 0 || xt > 36 {
		return false
	}
	u := math.Exp(-xt * zigR)
	frac, ex := math.Frexp(u) // u = frac·2^ex, frac in [1/2, 1): the binade [2^−(e+1), 2^−e) with e = −ex
	e := -ex
	if e < 0 || e > unitFineMaxExp {
		return false
	}
	mc := math.Round(((frac*2-1)*(1<<52) - 1) / 2)
	for dm := -3.0; dm <= 3; dm++ {
		m := mc + dm
		if m < 0 || m >= 1<<51 {
			continue
		}
		x := float64(std * zigTail(-math.Log(unitFineValue(e, uint64(m)))/zigR))
		if release(x, t < 0) {
			return true
		}
	}
	return false
}

// TestLatticeAttack releases S + noise for a clipped sum S and asks, coordinate by coordinate,
// whether the released value is impossible under S' = S + e, e one more example's clipped
// contribution (norm C spread over the coordinates): Mironov's (2012) attack. On the previous
// sampler's support (256 float32 lattices added in float32) a measurable fraction of the
// coordinates is impossible under S', decided with certainty; on the release a witness noise
// value that gives the same output under S' is found for every coordinate.
func TestLatticeAttack(t *testing.T) {
	const (
		d    = 1 << 15
		clip = 1.0
	)
	for _, tc := range []struct {
		name      string
		sigma     float64 // noise multiplier: std = sigma·clip
		sumScale  float64 // |S_j| is about sumScale·std
		wantOld   float64 // the previous sampler's fraction of impossible coordinates, at least
		releases  int
		sumSeed   uint64
		noiseSeed uint64
	}{
		{"small sum", 1.1, 0.01, 0.02, 4, 1, 10},
		{"sum of a batch", 0.8, 1, 0.01, 4, 2, 20},
		{"large sum", 2, 30, 0.001, 2, 3, 30},
	} {
		t.Run(tc.name, func(t *testing.T) {
			std := tc.sigma * clip
			r := rand.New(rand.NewPCG(tc.sumSeed, 1))
			s, s2 := make([]float32, d), make([]float32, d)
			for j := range s {
				s[j] = float32(r.NormFloat64() * tc.sumScale * std)
				e := float32(clip / math.Sqrt(d))
				if r.IntN(2) == 0 {
					e = -e
				}
				s2[j] = s[j] + e
			}

			// The previous sampler, on its own support.
			old := newLattice32(std)
			var oldImpossible, oldDecided int
			for rep := range tc.releases {
				w := rand.New(rand.NewPCG(tc.noiseSeed, uint64(rep)))
				for j, v := range s {
					n, ok := old.sample(w.Uint32())
					for !ok {
						n, ok = old.sample(w.Uint32())
					}
					imp, dec := old.impossible(v+n, s2[j])
					if dec {
						oldDecided++
					}
					if imp {
						oldImpossible++
					}
				}
			}
			frac := float64(oldImpossible) / float64(tc.releases*d)
			t.Logf("previous sampler: %d of %d coordinates (%.3f%%) impossible under S', %d decided", oldImpossible, tc.releases*d, 100*frac, oldDecided)
			if frac < tc.wantOld {
				t.Errorf("previous sampler: %.4f%% of coordinates impossible under S', want at least %.4f%%: the attack lost its power", 100*frac, 100*tc.wantOld)
			}

			// The release.
			noise := NewSeededNoise(tc.noiseSeed)
			delta := gridFor(std).delta
			var impossible, tail, offGrid int
			for range tc.releases {
				o := slices.Clone(s)
				noise.AddGaussian(o, std)
				for j := range o {
					if math.Abs(float64(o[j])-float64(s2[j])) > zigR*std {
						tail++
					}
					if !releaseWitness(o[j], s2[j], std) {
						if impossible < 5 {
							t.Errorf("coordinate %d: output %v (S %v) has no witness under S' %v", j, o[j], s[j], s2[j])
						}
						impossible++
					}
					// The check has power: a value off the grid has no witness.
					if off := math.Nextafter32(o[j], float32(math.Inf(1))); j%64 == 0 && float64(off-o[j]) < delta {
						offGrid++
						if releaseWitness(off, s2[j], std) {
							t.Errorf("coordinate %d: off-grid value %v has a witness", j, off)
						}
					}
				}
			}
			t.Logf("release: %d of %d coordinates without a witness under S' (%d in the tail); %d off-grid values refused", impossible, tc.releases*d, tail, offGrid)
			if impossible > 0 {
				t.Errorf("release: %d of %d coordinates without a witness under S'", impossible, tc.releases*d)
			}
		})
	}
}

// TestReleaseGrid checks the release grid: Δ is a power of two in (2^−21·std, 2^−20·std] fixed
// by std alone, the fast rounding equals round-half-even of y/Δ everywhere (its binade limits,
// NaN and ±Inf included), and every released value is a multiple of Δ (of Δ·scale when scaled
// by a power of two).
func TestReleaseGrid(t *testing.T) {
	for _, std := range []float64{1, 0.37, 1.1, 0.8 * 3, 1 << 10, 1.0 / 1024, 1e-30, 1e30, 7e300, 1e-310} {
		g := gridFor(std)
		frac, _ := math.Frexp(g.delta)
		if frac != 0.5 {
			t.Errorf("std %v: Δ = %v is not a power of two", std, g.delta)
		}
		if std > 1e-300 && !(g.delta <= std/(1<<20) && g.delta > std/(1<<21)) {
			t.Errorf("std %v: Δ = %v outside (std·2^−21, std·2^−20]", std, g.delta)
		}
		r := rand.New(rand.NewPCG(uint64(math.Float64bits(std)), 2))
		ys := []float64{0, g.delta / 2, 3 * g.delta / 2, -g.delta / 2, g.lim, -g.lim, g.lim * (1 - 0x1p-53), g.lim52, g.lim52 * (1 - 0x1p-53),
			math.Inf(1), math.Inf(-1), math.NaN(), math.MaxFloat64, -math.MaxFloat64}
		for range 2000 {
			ys = append(ys, r.NormFloat64()*std*math.Ldexp(1, r.IntN(80)-10))
		}
		for _, y := range ys {
			got := g.round(y)
			want := y
			if math.Abs(y) < g.lim52 {
				want = math.RoundToEven(y/g.delta) * g.delta
			}
			if math.Float64bits(got) != math.Float64bits(want) && !(math.IsNaN(got) && math.IsNaN(want)) && !(got == 0 && want == 0) {
				t.Errorf("std %v: round(%v) = %v, want %v", std, y, got, want)
			}
		}
	}
	for _, std := range []float64{1, 0.37, 2.5e-3, 3e4} {
		delta := gridFor(std).delta
		base := make([]float32, 3*chunkSize+11)
		r := rand.New(rand.NewPCG(1, 2))
		for i := range base {
			base[i] = float32(r.NormFloat64() * std * 5)
		}
		x := slices.Clone(base)
		NewSeededNoise(3).AddGaussian(x, std)
		y := slices.Clone(base)
		NewSeededNoise(3).AddGaussianScaled(y, std, 1.0/256)
		for i := range x {
			if q := float64(x[i]) / delta; q != math.Trunc(q) {
				t.Fatalf("std %v: released %v is not a multiple of Δ = %v", std, x[i], delta)
			}
			if q := float64(y[i]) * 256 / delta; q != math.Trunc(q) {
				t.Fatalf("std %v: scaled release %v is not a multiple of Δ/256", std, y[i])
			}
		}
	}
}

// TestAddGaussianPrefix: the first m values of a draw are the same whatever the draw's length
// (within a block, across blocks and across keystream chunks), so that a per-example draw in
// batch order does not depend on how many examples follow.
func TestAddGaussianPrefix(t *testing.T) {
	for _, l := range [][2]int{{320, 330}, {1, 2}, {511, 513}, {600, 4000}, {chunkSize - 3, chunkSize + 700}} {
		a, b := make([]float32, l[0]), make([]float32, l[1])
		NewSeededNoise(3).AddGaussian(a, 1)
		NewSeededNoise(3).AddGaussian(b, 1)
		for i := range a {
			if a[i] != b[i] {
				t.Fatalf("lengths %d and %d: value %d differs (%v, %v)", l[0], l[1], i, a[i], b[i])
			}
		}
	}
}
