package tuning

import (
	"math"
	"math/rand/v2"
	"strings"
	"testing"
)

// pmfMean sums k·P[K = k] of Definition 1's truncated negative binomial term by term, with the
// pmf written out as printed: P[K = k] = (1−γ)^k/(γ^−η − 1)·Π_{ℓ<k}(ℓ+η)/(ℓ+1) for η ≠ 0 and
// (1−γ)^k/(k·log(1/γ)) for η = 0 (γ^−η − 1 by expm1, for η near 0).
func pmfMean(eta, gamma float64) (mean, total float64) {
	p := 1.0 // Π_{ℓ<k}(ℓ+η)/(ℓ+1)·(1−γ)^k, built up with k
	for k := 1; k < 200000; k++ {
		var pk float64
		if eta == 0 {
			p *= 1 - gamma
			pk = p / (float64(k) * math.Log(1/gamma))
		} else {
			p *= (float64(k-1) + eta) / float64(k) * (1 - gamma)
			pk = p / math.Expm1(-eta*math.Log(gamma)) // γ^−η − 1
		}
		mean += float64(k) * pk
		total += pk
	}
	return mean, total
}

func TestMean(t *testing.T) {
	tests := []struct {
		dist Distribution
		want float64 // the closed form; 0: compare with pmfMean only
	}{
		{Geometric(0.1), 10},
		{Geometric(0.5), 2},
		{Logarithmic(0.1), 9 / math.Log(10)},
		{Logarithmic(0.02691825958900153), 10},
		{TruncatedNegativeBinomial(0.5, 0.2), 0.5 * 0.8 / (0.2 * (1 - math.Sqrt(0.2)))},
		{TruncatedNegativeBinomial(-0.5, 0.05), -0.5 * 0.95 / (0.05 * (1 - math.Pow(0.05, -0.5)))},
		{TruncatedNegativeBinomial(3, 0.3), 3 * 0.7 / (0.3 * (1 - math.Pow(0.3, 3)))},
		{TruncatedNegativeBinomial(1e-9, 0.1), 0},
		{Poisson(3), 3},
		{Poisson(0.25), 0.25},
	}
	for _, tc := range tests {
		got, err := tc.dist.Mean()
		if err != nil {
			t.Fatalf("%v: %v", tc.dist, err)
		}
		if tc.want != 0 && math.Abs(got/tc.want-1) > 1e-9 {
			t.Errorf("%v: E[K] = %.15g, closed form %.15g", tc.dist, got, tc.want)
		}
		if tc.dist.family != truncatedNegativeBinomial {
			continue
		}
		mean, total := pmfMean(tc.dist.eta, tc.dist.gamma)
		if math.Abs(total-1) > 1e-9 || math.Abs(got/mean-1) > 1e-9 {
			t.Errorf("%v: E[K] = %.15g, the pmf sums to %.15g with mean %.15g", tc.dist, got, total, mean)
		}
	}
}

func TestGammaForMean(t *testing.T) {
	tests := []struct {
		eta, mean float64
		want      float64 // 0: only the round trip is checked
	}{
		{1, 10, 0.1},
		// dp_accounting 0.6.0's _gamma_truncated_negative_binomial(0, 10), which bisects to a
		// relative 1e-9.
		{0, 10, 0.02691825958900153},
		{0.5, 4, 0},
		{-0.5, 20, 0},
		{5, 1.5, 0},
	}
	for _, tc := range tests {
		gamma, err := GammaForMean(tc.eta, tc.mean)
		if err != nil {
			t.Fatal(err)
		}
		if tc.want != 0 && math.Abs(gamma/tc.want-1) > 1e-8 {
			t.Errorf("GammaForMean(%v, %v) = %.15g, want %.15g", tc.eta, tc.mean, gamma, tc.want)
		}
		got, err := TruncatedNegativeBinomial(tc.eta, gamma).Mean()
		if err != nil {
			t.Fatal(err)
		}
		if math.Abs(got/tc.mean-1) > 1e-11 {
			t.Errorf("GammaForMean(%v, %v) = %v has mean %.15g", tc.eta, tc.mean, gamma, got)
		}
	}
	for _, bad := range []struct{ eta, mean float64 }{{-1, 10}, {math.NaN(), 10}, {0, 1}, {0, 0.5}, {1, math.Inf(1)}} {
		if _, err := GammaForMean(bad.eta, bad.mean); err == nil {
			t.Errorf("GammaForMean(%v, %v) accepted", bad.eta, bad.mean)
		}
	}
}

func TestValidateNamesTheParameter(t *testing.T) {
	tests := []struct {
		dist Distribution
		want []string // substrings of the error: the parameter and the fix
	}{
		{TruncatedNegativeBinomial(0.5, 0), []string{"γ = 0", "0 < γ < 1", "GammaForMean"}},
		{Geometric(1), []string{"γ = 1", "0 < γ < 1"}},
		{Logarithmic(1.2), []string{"γ = 1.2"}},
		{Geometric(math.NaN()), []string{"γ = NaN"}},
		{TruncatedNegativeBinomial(-1, 0.1), []string{"η = -1", "η > −1", "η = 0 (logarithmic)"}},
		{TruncatedNegativeBinomial(-3, 0.1), []string{"η = -3"}},
		{TruncatedNegativeBinomial(math.Inf(1), 0.1), []string{"η = +Inf"}},
		{TruncatedNegativeBinomial(math.NaN(), 0.1), []string{"η = NaN"}},
		{Poisson(0), []string{"μ = 0", "positive finite"}},
		{Poisson(-2), []string{"μ = -2"}},
		{Poisson(math.Inf(1)), []string{"μ = +Inf"}},
		{Poisson(math.NaN()), []string{"μ = NaN"}},
		{Distribution{}, []string{"no distribution", "Poisson"}},
	}
	for _, tc := range tests {
		err := tc.dist.Validate()
		if err == nil {
			t.Errorf("%v: accepted", tc.dist)
			continue
		}
		for _, w := range tc.want {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("%v: error %q does not say %q", tc.dist, err, w)
			}
		}
		if _, merr := tc.dist.Mean(); merr == nil {
			t.Errorf("%v: Mean accepted it", tc.dist)
		}
	}
}

// Sample's empirical mean and P[K = 1] match Mean and the pmf, within 5 standard errors.
func TestSample(t *testing.T) {
	for _, tc := range []struct {
		d  Distribution
		p1 float64 // P[K = 1]
	}{
		{Poisson(3), 3 * math.Exp(-3)},
		{Poisson(0.5), 0.5 * math.Exp(-0.5)},
		{Geometric(0.2), 0.2},
		{Logarithmic(0.1), 0.9 / math.Log(10)},
		{TruncatedNegativeBinomial(0.5, 0.1), 0.9 * 0.5 / (math.Pow(0.1, -0.5) - 1)},
		{TruncatedNegativeBinomial(-0.5, 0.05), 0.95 * -0.5 / (math.Pow(0.05, 0.5) - 1)},
	} {
		r := rand.New(rand.NewPCG(1, 2))
		const n = 40000
		var sum, sq float64
		ones := 0
		for range n {
			k, err := tc.d.Sample(r)
			if err != nil {
				t.Fatalf("%s: %v", tc.d, err)
			}
			sum += float64(k)
			sq += float64(k) * float64(k)
			if k == 1 {
				ones++
			}
		}
		mean, _ := tc.d.Mean()
		got := sum / n
		se := math.Sqrt((sq/n - got*got) / n)
		if math.Abs(got-mean) > 5*se {
			t.Errorf("%s: empirical mean %.4f, E[K] = %.4f (standard error %.4f)", tc.d, got, mean, se)
		}
		p1 := float64(ones) / n
		if se1 := math.Sqrt(tc.p1 * (1 - tc.p1) / n); math.Abs(p1-tc.p1) > 5*se1 {
			t.Errorf("%s: empirical P[K = 1] = %.4f, want %.4f", tc.d, p1, tc.p1)
		}
	}
	if _, err := (Distribution{}).Sample(rand.New(rand.NewPCG(1, 2))); err == nil {
		t.Error("the zero Distribution was sampled")
	}
	if _, err := Poisson(600).Sample(rand.New(rand.NewPCG(1, 2))); err == nil || !strings.Contains(err.Error(), "500") {
		t.Errorf("Poisson(600): %v", err)
	}
}
