package modelmix

import (
	"math"
	"testing"
)

func TestStepRDPReadingVectors(t *testing.T) {
	// seed-003 §4.7 test vectors: per-step ρ(α), add direction, from the reading's reference
	// accountant (Appendix Z), 10 significant digits. q, σ (noise std on the sum), c, L in
	// the paper's units; the package works in clip units Z = σ/c, W = L/c.
	orders := []int{2, 3, 4, 8, 16, 32}
	tests := []struct {
		q, sigma, c, width float64
		p                  int
		want               []float64
	}{
		{0.02, 9.35, 20, 75, 1, []float64{0.004751653336, 0.2040329421, 2.912298841, 13.28080065, 32.12555902, 68.99876692}},
		{0.02, 9.35, 20, 75, 25, []float64{0.0007798014567, 0.001281088132, 0.00203005041, 6.191036175, 27.49645856, 66.20173369}},
		{0.02, 9.35, 20, 75, 100, []float64{0.000734858782, 0.001173503945, 0.001694160421, 1.188569821, 17.83244312, 59.56359449}},
		{0.02, 9.35, 20, 0, 1, []float64{0.03770985487, 1.065972469, 3.935006059, 13.83104113, 32.43102458, 69.16948095}},
		{0.03, 6.8, 20, 225, 100, []float64{0.0005644412592, 0.0008708294792, 0.00119767923, 0.7282677941, 38.89722892, 119.5656085}},
		{0.03, 6.8, 20, 225, 1, []float64{0.1039772365, 5.490984835, 11.02276464, 29.79627578, 65.04264258, 134.5619316}},
		{0.16384, 4.13, 1, 409.6, 1, []float64{2.931178302e-05, 4.428471461e-05, 5.951180386e-05, 0.000123692576, 0.000277831433, 0.0008897529626}},
	}
	for _, tt := range tests {
		p := Params{SampleRate: tt.q, NoiseMultiplier: tt.sigma / tt.c, MixWidth: tt.width / tt.c, LinfParts: tt.p}
		rho, err := StepRDP(p, 32)
		if err != nil {
			t.Fatal(err)
		}
		for i, a := range orders {
			// 10 printed digits, plus the accountant's upward rounding margin (≈ 3e-9).
			if got := rho[a-2]; !relClose(got, tt.want[i], 1e-8, printed10) {
				t.Errorf("%+v: ρ(%d) = %.10g, want %.10g", p, a, got, tt.want[i])
			}
		}
	}
}

func TestStepRDPGaussianIsSGM(t *testing.T) {
	// W = 0 must be exactly the Poisson-subsampled Gaussian RDP at integer orders, here against
	// an exact big-float evaluation of Mironov, Talwar & Zhang's binomial expansion
	// (reference_test.go), for every p (the l∞ truncation does not matter without mixing).
	tests := []struct {
		q, z float64
		p    int
	}{
		{0.02, 0.4675169995852229, 1},
		{0.03, 1, 100},
		{256.0 / 60000, 1.1, 1},
		{0.2, 3, 1},
		{1, 2, 1},
		{0.5, 0.7, 25},
	}
	for _, tt := range tests {
		rho, err := StepRDP(Params{SampleRate: tt.q, NoiseMultiplier: tt.z, LinfParts: tt.p}, 64)
		if err != nil {
			t.Fatal(err)
		}
		for _, a := range []int{2, 3, 5, 8, 13, 21, 34, 64} {
			want := refSGM(a, tt.q, tt.z)
			if got := rho[a-2]; !relClose(got, want, 1e-12, 1e-13) {
				t.Errorf("q=%v z=%v p=%d: ρ(%d) = %.17g, MTZ binomial gives %.17g", tt.q, tt.z, tt.p, a, got, want)
			}
		}
	}
}

func TestStepRDPDirectIntegral(t *testing.T) {
	// For p = 1 the binomial sum equals D_α((1−q)P0 + qP1 ‖ P0), which can be integrated
	// directly for any α (seed-003 §4.5, §4.7 (a)). The remove direction D_α(P0 ‖ …) must not
	// exceed it: Theorem 4.1 uses the add direction only, which the paper justifies by a result
	// proved for the Gaussian alone (seed-003 §4.1, §4.7 (b)); this guards that assumption.
	tests := []struct{ q, z, w float64 }{
		{0.02, 0.4675, 3.75},
		{0.03, 0.34, 11.25},
		{0.2, 1, 2},
		{0.5, 2, 0.5},
		{0.99, 1.5, 10},
		{0.02, 2, 1e-4},
	}
	for _, tt := range tests {
		rho, err := StepRDP(Params{SampleRate: tt.q, NoiseMultiplier: tt.z, MixWidth: tt.w, LinfParts: 1}, 8)
		if err != nil {
			t.Fatal(err)
		}
		for _, a := range []int{2, 3, 4, 8} {
			add := refDirectRDP(float64(a), tt.q, tt.z, tt.w, true)
			if got := rho[a-2]; math.Abs(got-add) > 1e-8*add || got < add*(1-1e-11) {
				t.Errorf("q=%v z=%v W=%v: ρ(%d) = %.15g, direct integral %.15g", tt.q, tt.z, tt.w, a, got, add)
			}
			if remove := refDirectRDP(float64(a), tt.q, tt.z, tt.w, false); remove > add {
				t.Errorf("q=%v z=%v W=%v α=%d: remove direction %v exceeds add %v", tt.q, tt.z, tt.w, a, remove, add)
			}
		}
	}
}

func TestStepRDPOrdering(t *testing.T) {
	// seed-003 §4.7 (c), (f): ρ_MM ≤ ρ_SGM; non-increasing in the width W and in p; → ρ_SGM
	// as W → 0.
	const q, z = 0.02, 0.4675
	const maxOrder = 48
	sgm, err := StepRDP(Params{SampleRate: q, NoiseMultiplier: z}, maxOrder)
	if err != nil {
		t.Fatal(err)
	}
	curve := func(w float64, p int) []float64 {
		t.Helper()
		r, err := StepRDP(Params{SampleRate: q, NoiseMultiplier: z, MixWidth: w, LinfParts: p}, maxOrder)
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
	for _, p := range []int{1, 4, 25, 100} {
		prev := sgm
		for _, w := range []float64{1e-6, 0.5, 1, 3.75, 7.5, 15, 50} {
			r := curve(w, p)
			for i := range r {
				// 1e-7: the upward rounding margin of the integrated curves (the SGM has none).
				if r[i] > prev[i]*(1+1e-7) {
					t.Errorf("p=%d: ρ(%d) grows with the width: %v at W=%v after %v", p, i+2, r[i], w, prev[i])
				}
			}
			prev = r
		}
		tiny := curve(1e-6, p)
		for i := range tiny {
			if math.Abs(tiny[i]-sgm[i]) > 1e-6*sgm[i] {
				t.Errorf("p=%d: ρ(%d) at W=1e-6 is %v, SGM %v", p, i+2, tiny[i], sgm[i])
			}
		}
	}
	for _, w := range []float64{0.5, 3.75, 15} {
		prev := sgm
		for _, p := range []int{1, 2, 4, 25, 100, 400} {
			r := curve(w, p)
			for i := range r {
				if r[i] > prev[i]*(1+1e-7) {
					t.Errorf("W=%v: ρ(%d) grows with p: %v at p=%d after %v", w, i+2, r[i], p, prev[i])
				}
			}
			prev = r
		}
	}
}

func TestStepRDPErrors(t *testing.T) {
	tests := []struct {
		name     string
		p        Params
		maxOrder int
	}{
		{"q zero", Params{SampleRate: 0, NoiseMultiplier: 1}, 8},
		{"q above one", Params{SampleRate: 1.5, NoiseMultiplier: 1}, 8},
		{"noise zero", Params{SampleRate: 0.1}, 8},
		{"noise inf", Params{SampleRate: 0.1, NoiseMultiplier: math.Inf(1)}, 8},
		{"width negative", Params{SampleRate: 0.1, NoiseMultiplier: 1, MixWidth: -1}, 8},
		{"width nan", Params{SampleRate: 0.1, NoiseMultiplier: 1, MixWidth: math.NaN()}, 8},
		{"parts negative", Params{SampleRate: 0.1, NoiseMultiplier: 1, LinfParts: -2}, 8},
		{"order one", Params{SampleRate: 0.1, NoiseMultiplier: 1}, 1},
		{"order too large", Params{SampleRate: 0.1, NoiseMultiplier: 1}, maxOrderLimit + 1},
	}
	for _, tt := range tests {
		if _, err := StepRDP(tt.p, tt.maxOrder); err == nil {
			t.Errorf("%s: want an error", tt.name)
		}
	}
}
