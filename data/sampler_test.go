package data

import (
	"fmt"
	"math"
	"math/rand/v2"
	"reflect"
	"slices"
	"testing"

	"gonum.org/v1/gonum/stat/distuv"
)

func testRand(seed uint64) *rand.Rand { return rand.New(rand.NewPCG(seed, 42)) }

// checkIndices fails unless batch is strictly increasing (when sorted is set), free of
// duplicates and within [0, n).
func checkIndices(t *testing.T, batch []int, n int, sorted bool) {
	t.Helper()
	seen := map[int]bool{}
	for k, i := range batch {
		if i < 0 || i >= n {
			t.Fatalf("index %d outside [0, %d)", i, n)
		}
		if seen[i] {
			t.Fatalf("index %d drawn twice in one batch", i)
		}
		seen[i] = true
		if sorted && k > 0 && batch[k-1] >= i {
			t.Fatalf("batch not increasing at position %d: %d then %d", k, batch[k-1], i)
		}
	}
}

func TestPoissonStatistics(t *testing.T) {
	const n, steps = 60000, 1000
	q := 256.0 / 60000
	s, err := newPoisson(n, q, testRand(1))
	if err != nil {
		t.Fatal(err)
	}
	counts := make([]int, n)
	sizes := make([]float64, steps)
	dst := make([]int, 0, 1024)
	for k := range steps {
		var b []int
		b, _ = s.Next(dst)
		checkIndices(t, b, n, true)
		for _, i := range b {
			counts[i]++
		}
		sizes[k] = float64(len(b))
	}
	// Batch size ~ Bin(n, q): mean nq = 256, variance nq(1−q).
	mean, variance := meanVar(sizes)
	wantVar := n * q * (1 - q)
	if se := math.Sqrt(wantVar / steps); math.Abs(mean-n*q) > 5*se {
		t.Errorf("mean batch size %.2f, want %.2f ± %.2f", mean, n*q, 5*se)
	}
	if math.Abs(variance/wantVar-1) > 0.2 {
		t.Errorf("batch size variance %.1f, want %.1f (a fixed-size sampler would give 0)", variance, wantVar)
	}
	// Each index is included Bin(steps, q) times, independently across indices.
	c := make([]float64, n)
	for i, v := range counts {
		c[i] = float64(v)
	}
	cm, cv := meanVar(c)
	if math.Abs(cm-steps*q) > 0.02*steps*q {
		t.Errorf("mean inclusion count %.3f, want %.3f", cm, steps*q)
	}
	if math.Abs(cv/(steps*q*(1-q))-1) > 0.05 {
		t.Errorf("inclusion count variance %.3f, want %.3f", cv, steps*q*(1-q))
	}
	// The first and last indices are as likely as any: the geometric skips have no edge bias.
	for _, part := range [][2]int{{0, 1000}, {n - 1000, n}} {
		sum := 0
		for _, v := range counts[part[0]:part[1]] {
			sum += v
		}
		want := 1000 * steps * q
		if math.Abs(float64(sum)-want) > 5*math.Sqrt(want) {
			t.Errorf("indices %v included %d times, want %.0f", part, sum, want)
		}
	}
}

// TestPoissonSubsetLaw checks the whole distribution on a tiny set: each of the 2^n subsets
// must appear with probability q^|S| (1−q)^(n−|S|).
func TestPoissonSubsetLaw(t *testing.T) {
	const n, draws = 4, 200000
	for _, q := range []float64{0.1, 0.5, 0.9} {
		s, err := newPoisson(n, q, testRand(2))
		if err != nil {
			t.Fatal(err)
		}
		freq := make([]int, 1<<n)
		for range draws {
			b, _ := s.Next(nil)
			mask := 0
			for _, i := range b {
				mask |= 1 << i
			}
			freq[mask]++
		}
		chi2 := 0.0
		for mask, f := range freq {
			k := popcount(mask)
			p := math.Pow(q, float64(k)) * math.Pow(1-q, float64(n-k))
			e := p * draws
			chi2 += (float64(f) - e) * (float64(f) - e) / e
		}
		// 15 degrees of freedom: the 0.999 quantile is 37.7.
		if chi2 > 37.7 {
			t.Errorf("q=%v: subset frequencies give χ² = %.1f > 37.7 (15 dof, p = 0.001)", q, chi2)
		}
	}
}

func TestWithoutReplacementSubsetLaw(t *testing.T) {
	const n, b, draws = 5, 2, 100000
	s, err := newWithoutReplacement(n, b, testRand(3))
	if err != nil {
		t.Fatal(err)
	}
	freq := map[int]int{}
	for range draws {
		batch, _ := s.Next(nil)
		if len(batch) != b {
			t.Fatalf("batch of %d, want %d", len(batch), b)
		}
		checkIndices(t, batch, n, false)
		mask := 0
		for _, i := range batch {
			mask |= 1 << i
		}
		freq[mask]++
	}
	if len(freq) != 10 {
		t.Fatalf("%d distinct subsets, want C(5,2) = 10", len(freq))
	}
	chi2, e := 0.0, float64(draws)/10
	for _, f := range freq {
		chi2 += (float64(f) - e) * (float64(f) - e) / e
	}
	if chi2 > 27.9 { // 9 dof, p = 0.001
		t.Errorf("subset frequencies give χ² = %.1f > 27.9", chi2)
	}
	if s.SampleRate() != 0.4 || s.StepsPerEpoch() != 3 {
		t.Errorf("rate %v steps/epoch %d, want 0.4 and ⌈5/2⌉ = 3", s.SampleRate(), s.StepsPerEpoch())
	}
}

func TestShuffledEpochs(t *testing.T) {
	const n, b, epochs = 10, 3, 3000
	s, err := newShuffled(n, b, testRand(4))
	if err != nil {
		t.Fatal(err)
	}
	if s.StepsPerEpoch() != 3 {
		t.Fatalf("steps per epoch %d, want ⌊10/3⌋ = 3", s.StepsPerEpoch())
	}
	dropped := make([]int, n)
	var firstBatches [][]int
	for e := range epochs {
		seen := map[int]bool{}
		for k := range 3 {
			batch, info := s.Next(nil)
			if info.Epoch() != e || info.BatchIndex() != k || info.Step() != 3*e+k {
				t.Fatalf("info %+v, want epoch %d batch %d step %d", info, e, k, 3*e+k)
			}
			if len(batch) != b {
				t.Fatalf("batch of %d, want %d (partial batches are dropped)", len(batch), b)
			}
			for _, i := range batch {
				if seen[i] {
					t.Fatalf("epoch %d visits index %d twice", e, i)
				}
				seen[i] = true
			}
			if k == 0 && e < 5 {
				firstBatches = append(firstBatches, slices.Sorted(slices.Values(batch)))
			}
		}
		for i := range n {
			if !seen[i] {
				dropped[i]++
			}
		}
	}
	// Exactly one example is dropped per epoch, uniformly at random.
	for i, d := range dropped {
		if math.Abs(float64(d)-epochs/10.0) > 5*math.Sqrt(epochs*0.1*0.9) {
			t.Errorf("index %d dropped in %d of %d epochs, want about %d", i, d, epochs, epochs/10)
		}
	}
	if slices.EqualFunc(firstBatches[:4], firstBatches[1:5], slices.Equal) {
		t.Error("the first batch is the same in five epochs: not reshuffled")
	}
}

func TestShuffledOnceIsCyclic(t *testing.T) {
	const n, b = 103, 10
	s, err := newShuffledOnce(n, b, testRand(5))
	if err != nil {
		t.Fatal(err)
	}
	if s.StepsPerEpoch() != 10 || s.SampleRate() != 10.0/103 {
		t.Fatalf("steps %d rate %v, want 10 and 10/103", s.StepsPerEpoch(), s.SampleRate())
	}
	first := make([][]int, 10)
	seen := map[int]bool{}
	for step := range 35 {
		batch, info := s.Next(nil)
		if info.BatchIndex() != step%10 || info.Epoch() != step/10 {
			t.Fatalf("step %d: info %+v", step, info)
		}
		if step < 10 {
			first[step] = batch
			for _, i := range batch {
				if seen[i] {
					t.Fatalf("index %d in two batches of the partition", i)
				}
				seen[i] = true
			}
		} else if !slices.Equal(batch, first[step%10]) {
			t.Fatalf("step %d: batch %v differs from the partition's batch %d %v", step, batch, step%10, first[step%10])
		}
	}
	if len(seen) != 100 {
		t.Errorf("partition covers %d indices, want 100 (3 left over)", len(seen))
	}
	if !slices.Equal(s.Batch(3), first[3]) {
		t.Error("Batch(3) differs from the fourth batch drawn")
	}
}

func TestPoissonWithRejection(t *testing.T) {
	const n, steps = 1000, 20000
	q, minBatch := 0.01, 8 // mean 10: P(B < 8) ≈ 0.22
	s, err := newPoissonWithRejection(n, q, minBatch, testRand(6))
	if err != nil {
		t.Fatal(err)
	}
	// Reference values from gonum's binomial distribution, independent of the sampler's sum.
	bin := distuv.Binomial{N: n, P: q}
	wantAccept := 1 - bin.CDF(float64(minBatch-1))
	wantMean := 0.0
	for k := minBatch; k <= 60; k++ {
		wantMean += float64(k) * bin.Prob(float64(k))
	}
	wantMean /= wantAccept
	if math.Abs(s.AcceptanceProbability()-wantAccept) > 1e-9 || math.Abs(s.ExpectedBatchSize()-wantMean) > 1e-6 {
		t.Errorf("acceptance %v mean %v, want %v and %v", s.AcceptanceProbability(), s.ExpectedBatchSize(), wantAccept, wantMean)
	}
	rejected, total := 0, 0.0
	for range steps {
		b, info := s.Next(nil)
		if len(b) < minBatch {
			t.Fatalf("batch of %d accepted, below the threshold %d", len(b), minBatch)
		}
		checkIndices(t, b, n, true)
		rejected += info.Rejected()
		total += float64(len(b))
	}
	// Rejections per batch are geometric with mean 1/accept − 1.
	wantRej := 1/wantAccept - 1
	if got := float64(rejected) / steps; math.Abs(got-wantRej) > 0.05*wantRej {
		t.Errorf("%.4f rejections per batch, want %.4f", got, wantRej)
	}
	if got := total / steps; math.Abs(got-wantMean) > 0.05 {
		t.Errorf("mean accepted batch size %.3f, want %.3f", got, wantMean)
	}
	if _, err := newPoissonWithRejection(60000, 1e-4, 50, testRand(7)); err == nil {
		t.Error("a threshold of 50 on batches of mean 6 was accepted; want an error")
	}
}

func TestFullAndConstructorErrors(t *testing.T) {
	f, err := newFull(5)
	if err != nil {
		t.Fatal(err)
	}
	b, info := f.Next(make([]int, 0, 5))
	if !slices.Equal(b, []int{0, 1, 2, 3, 4}) || info.Step() != 0 || f.SampleRate() != 1 {
		t.Errorf("full batch %v info %+v rate %v", b, info, f.SampleRate())
	}
	for _, c := range []struct {
		scheme     Scheme
		n, b, minB int
		rng        *rand.Rand
	}{
		{SchemePoisson, 0, 1, 0, testRand(1)},
		{SchemePoisson, 10, 11, 0, testRand(1)},
		{SchemePoisson, 10, 5, 0, nil},
		{SchemeShuffled, 10, 0, 0, testRand(1)},
		{SchemeShuffledOnce, 10, 5, 0, nil},
		{SchemeWithoutReplacement, 10, 20, 0, testRand(1)},
		{SchemePoissonWithRejection, 10, 5, 11, testRand(1)},
		{"bernoulli", 10, 5, 0, testRand(1)},
	} {
		if _, err := NewSampler(c.scheme, c.n, c.b, c.minB, c.rng); err == nil {
			t.Errorf("NewSampler(%q, n=%d, b=%d, min=%d, rng=%v) succeeded, want an error", c.scheme, c.n, c.b, c.minB, c.rng != nil)
		}
	}
}

func TestSamplersDeclareAndDoNotAllocate(t *testing.T) {
	const n, b = 6000, 60
	for _, scheme := range []Scheme{SchemeFull, SchemePoisson, SchemePoissonWithRejection, SchemeWithoutReplacement, SchemeShuffled, SchemeShuffledOnce} {
		t.Run(string(scheme), func(t *testing.T) {
			s, err := NewSampler(scheme, n, b, b/2, testRand(8))
			if err != nil {
				t.Fatal(err)
			}
			if s.Scheme() != scheme || s.DatasetSize() != n {
				t.Errorf("scheme %q n %d, want %q %d", s.Scheme(), s.DatasetSize(), scheme, n)
			}
			wantQ, wantSteps := float64(b)/n, 100
			if scheme == SchemeFull {
				wantQ, wantSteps = 1, 1
			}
			if s.SampleRate() != wantQ || s.StepsPerEpoch() != wantSteps {
				t.Errorf("rate %v steps/epoch %d, want %v and %d", s.SampleRate(), s.StepsPerEpoch(), wantQ, wantSteps)
			}
			dst := make([]int, 0, n)
			if allocs := testing.AllocsPerRun(50, func() { dst, _ = s.Next(dst) }); allocs != 0 {
				t.Errorf("Next allocates %v times per call with a large enough dst", allocs)
			}
		})
	}
}

func BenchmarkPoissonNext(b *testing.B) {
	for _, q := range []float64{256.0 / 60000, 0.1} {
		b.Run(fmt.Sprintf("n=60000/q=%.4f", q), func(b *testing.B) {
			s, _ := newPoisson(60000, q, testRand(9))
			dst := make([]int, 0, 60000)
			for b.Loop() {
				dst, _ = s.Next(dst)
			}
		})
	}
}

func meanVar(x []float64) (mean, variance float64) {
	for _, v := range x {
		mean += v
	}
	mean /= float64(len(x))
	for _, v := range x {
		variance += (v - mean) * (v - mean)
	}
	return mean, variance / float64(len(x)-1)
}

func popcount(x int) int {
	c := 0
	for ; x != 0; x &= x - 1 {
		c++
	}
	return c
}

// PlannedBatch must describe, without drawing, exactly the batch Next will return at every
// step (Rejected aside, which is random).
func TestPlannedBatchMatchesNext(t *testing.T) {
	for _, scheme := range []Scheme{SchemePoisson, SchemeWithoutReplacement, SchemeShuffled, SchemeShuffledOnce, SchemeFull, SchemePoissonWithRejection} {
		s, err := NewSampler(scheme, 103, 10, 2, testRand(4))
		if err != nil {
			t.Fatal(err)
		}
		for k := range 35 {
			want := PlannedBatch(s, k)
			_, got := s.Next(nil)
			got.rejected = 0
			if got != want {
				t.Errorf("%s step %d: Next %+v, PlannedBatch %+v", scheme, k, got, want)
			}
		}
	}
}

// A sampler restored from its state into a fresh sampler of the same settings, with its
// generator's state carried over, draws exactly the batches the original goes on to draw; a
// state from other settings, or a corrupted one, is refused.
func TestSamplerStateResumes(t *testing.T) {
	for _, scheme := range []Scheme{SchemePoisson, SchemeWithoutReplacement, SchemeShuffled, SchemeShuffledOnce, SchemeFull, SchemePoissonWithRejection} {
		src := rand.NewChaCha8([32]byte{7})
		s, err := NewSampler(scheme, 103, 10, 2, rand.New(src))
		if err != nil {
			t.Fatal(err)
		}
		for range 13 { // mid-epoch
			s.Next(nil)
		}
		state, err := s.MarshalBinary()
		if err != nil {
			t.Fatal(err)
		}
		rngState, _ := src.MarshalBinary()

		src2 := rand.NewChaCha8([32]byte{9}) // another stream: the partition drawn here is replaced
		r, err := NewSampler(scheme, 103, 10, 2, rand.New(src2))
		if err != nil {
			t.Fatal(err)
		}
		if err := r.UnmarshalBinary(state); err != nil {
			t.Fatalf("%s: %v", scheme, err)
		}
		if err := src2.UnmarshalBinary(rngState); err != nil {
			t.Fatal(err)
		}
		for k := range 25 {
			want, wi := s.Next(nil)
			got, gi := r.Next(nil)
			if !slices.Equal(got, want) || gi != wi {
				t.Fatalf("%s: resumed step %d drew %v %+v, want %v %+v", scheme, 13+k, got, gi, want, wi)
			}
		}

		other, _ := NewSampler(scheme, 104, 10, 2, testRand(1))
		if err := other.UnmarshalBinary(state); err == nil {
			t.Errorf("%s: a state over 103 examples restored into a sampler over 104", scheme)
		}
		for _, bad := range [][]byte{nil, state[:len(state)-1], append(slices.Clone(state), 0)} {
			if err := r.UnmarshalBinary(bad); err == nil {
				t.Errorf("%s: corrupted state (%d bytes) accepted", scheme, len(bad))
			}
		}
	}
	// A ShuffledOnce state whose order is not a permutation is refused.
	s, _ := newShuffledOnce(5, 2, testRand(1))
	s.perm[0] = s.perm[1]
	state, _ := s.MarshalBinary()
	fresh, _ := newShuffledOnce(5, 2, testRand(1))
	if err := fresh.UnmarshalBinary(state); err == nil {
		t.Error("a partition with a repeated index was accepted")
	}
}

// A Sampler counts the batches it drew (restored with its state) and reports its declaration;
// a BatchInfo has no field a program can set: it is built only by a sampler.
func TestSamplerDrawnAndDeclaration(t *testing.T) {
	for _, tc := range []struct {
		scheme         Scheme
		size, minBatch int
		acceptBelowOne bool
	}{
		{SchemePoisson, 0, 0, false}, {SchemePoissonWithRejection, 0, 2, true}, {SchemeWithoutReplacement, 10, 0, false},
		{SchemeShuffled, 10, 0, false}, {SchemeShuffledOnce, 10, 0, false}, {SchemeFull, 103, 0, false},
	} {
		s, err := NewSampler(tc.scheme, 103, 10, 2, testRand(9))
		if err != nil {
			t.Fatal(err)
		}
		for k := range 7 {
			if s.Drawn() != k {
				t.Fatalf("%s: Drawn() = %d before batch %d", tc.scheme, s.Drawn(), k)
			}
			if _, info := s.Next(nil); info.Step() != k {
				t.Fatalf("%s: batch %d declares step %d", tc.scheme, k, info.Step())
			}
		}
		state, _ := s.MarshalBinary()
		r, _ := NewSampler(tc.scheme, 103, 10, 2, testRand(9))
		if err := r.UnmarshalBinary(state); err != nil || r.Drawn() != 7 {
			t.Errorf("%s: restored sampler has drawn %d (%v), want 7", tc.scheme, r.Drawn(), err)
		}
		if s.BatchSize() != tc.size || s.MinBatchSize() != tc.minBatch || (s.AcceptanceProbability() < 1) != tc.acceptBelowOne {
			t.Errorf("%s: batch size %d, threshold %d, acceptance %v", tc.scheme, s.BatchSize(), s.MinBatchSize(), s.AcceptanceProbability())
		}
	}
	typ := reflect.TypeOf(BatchInfo{})
	for i := range typ.NumField() {
		if f := typ.Field(i); f.IsExported() {
			t.Errorf("BatchInfo has the exported field %s: a program could write a declaration", f.Name)
		}
	}
}
