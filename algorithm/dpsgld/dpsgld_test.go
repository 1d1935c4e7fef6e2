package dpsgld

import (
	"math"
	"strings"
	"testing"

	"github.com/dptrain/dptrain/accounting"
	"github.com/dptrain/dptrain/algorithm/internal/steptest"
	"github.com/dptrain/dptrain/data"
	"github.com/dptrain/dptrain/models"
	"github.com/dptrain/dptrain/optim"
)

func TestSoftmaxConstants(t *testing.T) {
	for _, tc := range []struct {
		rx      float64
		classes int
		lambda  float64
		bias    bool
		want    Constants
	}{
		// R_x'² = 2: L_data = 2, β = 1 + 0.01, R = min(√(2 ln 10/0.01), 2/0.01).
		{1, 10, 0.01, true, Constants{
			DataLipschitz: 2, Smoothness: 1.01, StrongConvexity: 0.01,
			Radius: math.Sqrt(200 * math.Log(10)), Lipschitz: 2 + 0.01*math.Sqrt(200*math.Log(10)), FeatureNorm: 1}},
		// R_x'² = 9: L_data = 3√2, β = 4.5 + 1, R = min(√(2 ln 2), 3√2).
		{3, 2, 1, false, Constants{
			DataLipschitz: 3 * math.Sqrt2, Smoothness: 5.5, StrongConvexity: 1,
			Radius: math.Sqrt(2 * math.Ln2), Lipschitz: 3*math.Sqrt2 + math.Sqrt(2*math.Ln2), FeatureNorm: 3}},
		// Large λ: the Lipschitz radius L_data/λ is the smaller one.
		{1, 1000, 10, false, Constants{
			DataLipschitz: math.Sqrt2, Smoothness: 10.5, StrongConvexity: 10,
			Radius: math.Sqrt2 / 10, Lipschitz: 2 * math.Sqrt2, FeatureNorm: 1}},
	} {
		got, err := SoftmaxConstants(tc.rx, tc.classes, tc.lambda, tc.bias)
		if err != nil {
			t.Fatal(err)
		}
		for _, f := range []struct {
			name      string
			got, want float64
		}{
			{"L", got.Lipschitz, tc.want.Lipschitz}, {"L_data", got.DataLipschitz, tc.want.DataLipschitz},
			{"β", got.Smoothness, tc.want.Smoothness}, {"λ", got.StrongConvexity, tc.want.StrongConvexity},
			{"R", got.Radius, tc.want.Radius}, {"R_x", got.FeatureNorm, tc.want.FeatureNorm},
		} {
			if math.Abs(f.got-f.want) > 1e-12*f.want {
				t.Errorf("R_x=%v C=%d λ=%v: %s = %v, want %v", tc.rx, tc.classes, tc.lambda, f.name, f.got, f.want)
			}
		}
		if err := got.Validate(); err != nil {
			t.Error(err)
		}
		run := got.Run(1000)
		if !run.LastIterateOnly || run.UpdateRule != "sgd" || run.Convexity != accounting.StronglyConvex ||
			run.Lipschitz != got.Lipschitz || run.StrongConvexity != got.StrongConvexity ||
			run.Smoothness != got.Smoothness || run.DomainDiameter != 2*got.Radius || run.DatasetSize != 1000 {
			t.Errorf("Run = %+v", run)
		}
	}
	for _, bad := range [][3]float64{{0, 10, 0.1}, {1, 1, 0.1}, {1, 10, 0}} {
		if _, err := SoftmaxConstants(bad[0], int(bad[1]), bad[2], true); err == nil {
			t.Errorf("SoftmaxLangevinConstants%v accepted", bad)
		}
	}
}

// TestSoftmaxGradientBound checks L_data on the test's softmax model: per-example gradients at
// random parameters and features of norm R_x never exceed √2·R_x'.
func TestSoftmaxGradientBound(t *testing.T) {
	const dim, classes, rx = 6, 4, 2.0
	c, _ := SoftmaxConstants(rx, classes, 0.1, true)
	m := steptest.NewSoftmax(dim, classes)
	noise := optim.NewSeededNoise(3)
	x := make([]float32, dim)
	for trial := range 500 {
		noise.FillGaussian(m.Theta, float64(1+trial%20))
		noise.FillGaussian(x, 1)
		noise.FillGaussian(x, 1)
		s := rx / optim.Norm2(x)
		for i := range x {
			x[i] = float32(float64(x[i]) * s * (1 - 1e-7))
		}
		g, _ := m.SampleGrad(data.Batch{X: x, Y: []int32{int32(trial % classes)}, N: 1}, 0)
		var n2 float64
		for _, v := range g {
			n2 += v * v
		}
		if math.Sqrt(n2) > c.DataLipschitz {
			t.Fatalf("‖∇ℓ‖ = %v > L_data = %v", math.Sqrt(n2), c.DataLipschitz)
		}
	}
}

func TestDPSGLDStepSizePrecondition(t *testing.T) {
	c, _ := SoftmaxConstants(1, 10, 0.01, true) // β = 1.01
	beta := c.Smoothness
	noise := optim.NewSeededNoise(1)
	if _, err := New(Config{Sigma: 1, Constants: c, Schedule: optim.Constant{Rate: 1 / beta}}, noise); err == nil || !strings.Contains(err.Error(), "1/β") {
		t.Errorf("η = 1/β: error %v, want one naming η < 1/β", err)
	}
	if _, err := New(Config{Sigma: 1, Constants: c, Schedule: optim.Constant{Rate: 0.999 / beta}}, noise); err != nil {
		t.Errorf("η = 0.999/β refused: %v", err)
	}
	if _, err := New(Config{Sigma: 1, Constants: c, Schedule: Decreasing{beta, c.StrongConvexity}, PlannedSteps: 1000}, noise); err != nil {
		t.Errorf("decreasing schedule refused: %v", err)
	}
	// A warm-up η_k = 0.15(k+1)/β exceeds 1/β first at k = 6: it passes a check of η_0 only,
	// fails a planned check, and fails at step 6.
	warm := optim.Cosine{Rate: 1.5 / beta, Total: 100, Warmup: 10}
	if _, err := New(Config{Sigma: 1, Constants: c, Schedule: warm, PlannedSteps: 20}, noise); err == nil || !strings.Contains(err.Error(), "η_6") {
		t.Errorf("warm-up beyond 1/β with PlannedSteps: error %v, want one at η_6 (1.05/β)", err)
	}
	o, err := New(Config{Sigma: 1, Constants: c, Schedule: warm}, noise)
	if err != nil {
		t.Fatal(err)
	}
	m := steptest.NewSoftmax(3, 10)
	o.Init(m.Theta)
	b := data.Batch{X: make([]float32, 6), Y: []int32{0, 1}, N: 2}
	info := steptest.Drawn(data.SchemeWithoutReplacement, 10, float64(2), 0, 0)
	for k := range 7 {
		_, err := o.Step(m, b, info)
		if (err != nil) != (k == 6) {
			t.Errorf("step %d (η = %v): error %v", k, warm.StepSize(k), err)
		}
	}
}

// TestDPSGLDReplay recomputes Init and two steps by hand from a replay of the same seeded
// stream: θ_0 = Π(N(0, 2σ²/λ)), θ_{k+1} = Π(θ_k − η_k(ḡ + λθ_k) + √(2η_k)σZ), with the bias
// regularised like every other parameter and features rescaled to ‖x‖ ≤ R_x.
func TestDPSGLDReplay(t *testing.T) {
	const dim, classes, m, n = 5, 3, 4, 40
	for _, tc := range []struct {
		name   string
		sigma  float64
		lambda float64
	}{
		{"projection active", 1, 0.1},
		{"projection idle", 0.01, 0.5},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, err := SoftmaxConstants(1, classes, tc.lambda, true)
			if err != nil {
				t.Fatal(err)
			}
			sched := Decreasing{c.Smoothness, c.StrongConvexity}
			o, err := New(Config{Sigma: tc.sigma, Constants: c, Schedule: sched}, optim.NewSeededNoise(9))
			if err != nil {
				t.Fatal(err)
			}
			model := steptest.NewSoftmax(dim, classes)
			ref := steptest.NewSoftmax(dim, classes)
			replay := optim.NewSeededNoise(9)
			o.Init(model.Theta)

			project := func(th []float64) bool {
				var s float64
				for _, v := range th {
					s += v * v
				}
				if s <= c.Radius*c.Radius {
					return false
				}
				f := c.Radius / math.Sqrt(s)
				for i := range th {
					th[i] *= f
				}
				return true
			}
			theta := make([]float64, len(model.Theta))
			z := make([]float32, len(theta))
			replay.FillGaussian(z, math.Sqrt(2*tc.sigma*tc.sigma/tc.lambda))
			for i := range theta {
				theta[i] = float64(z[i])
			}
			projected := project(theta)
			compare := func(step int) {
				t.Helper()
				var r float64
				for i, v := range model.Theta {
					if d := math.Abs(float64(v) - theta[i]); d > 1e-5*math.Max(1, math.Abs(theta[i])) {
						t.Fatalf("step %d: θ[%d] = %v, want %v", step, i, v, theta[i])
					}
					r += float64(v) * float64(v)
				}
				if math.Sqrt(r) > c.Radius {
					t.Fatalf("step %d: ‖θ‖ = %v > R = %v", step, math.Sqrt(r), c.Radius)
				}
			}
			compare(0)

			x := []float32{
				3, 0, 4, 0, 0, // norm 5: rescaled to 1
				0.1, 0.2, -0.3, 0, 0.1,
				0, 0, 0, 0, 0,
				-0.5, 0.5, 0.5, -0.5, 0, // norm 1
			}
			xOrig := append([]float32(nil), x...)
			xRef := append([]float32(nil), x...)
			for i := range 5 {
				xRef[i] /= 5
			}
			b := data.Batch{X: x, Y: []int32{0, 2, 1, 2}, N: m}
			info := steptest.Drawn(data.SchemeWithoutReplacement, n, float64(m), 0, 0)
			for k := range 2 {
				res, err := o.Step(model, b, info)
				if err != nil {
					t.Fatal(err)
				}
				eta := sched.StepSize(k)
				for i := range theta {
					ref.Theta[i] = float32(theta[i])
				}
				gbar := make([]float64, len(theta))
				for i := range m {
					g, _ := ref.SampleGrad(data.Batch{X: xRef, Y: b.Y, N: m}, i)
					for j, v := range g {
						gbar[j] += v / m
					}
				}
				clear(z)
				replay.AddGaussian(z, math.Sqrt(2*eta)*tc.sigma)
				for i := range theta {
					theta[i] += -eta*(gbar[i]+tc.lambda*theta[i]) + float64(z[i])
				}
				projected = project(theta) || projected
				compare(k + 1)
				if res.Stats.Clipped != 0 {
					t.Errorf("step %d: safety clip activated %d times", k, res.Stats.Clipped)
				}
			}
			if model.MaxFeatureNorm > 1+1e-6 {
				t.Errorf("model saw a feature norm %v > R_x = 1", model.MaxFeatureNorm)
			}
			for i := range x {
				if x[i] != xOrig[i] {
					t.Fatal("DP-SGLD modified the caller's batch")
				}
			}
			if want := tc.sigma == 1; projected != want {
				t.Errorf("projection active = %v, want %v", projected, want)
			}
		})
	}
}

func TestDPSGLDRecords(t *testing.T) {
	const m, n, sigma = 4, 20, 0.3
	c, _ := SoftmaxConstants(1, 3, 0.05, true)
	sched := Decreasing{c.Smoothness, c.StrongConvexity}
	o, err := New(Config{Sigma: sigma, Constants: c, Schedule: sched}, optim.NewSeededNoise(2))
	if err != nil {
		t.Fatal(err)
	}
	if o.Stateful() || o.UpdateRule() != "sgd" {
		t.Error("DP-SGLD declares state or a rule other than sgd")
	}
	model := steptest.NewSoftmax(2, 3)
	b := data.Batch{X: make([]float32, 2*m), Y: make([]int32, m), N: m}
	info := steptest.Drawn(data.SchemeWithoutReplacement, n, float64(m), 0, 0)
	if _, err := o.Step(model, b, info); err == nil || !strings.Contains(err.Error(), "Init") {
		t.Errorf("step before Init: error %v", err)
	}
	o.Init(model.Theta)
	const steps = 25
	for k := range steps {
		res, err := o.Step(model, b, info)
		if err != nil {
			t.Fatal(err)
		}
		if len(res.Records) != 1 {
			t.Fatalf("step %d returned %d records", k, len(res.Records))
		}
		r := res.Records[0]
		eta := 1 / (2*c.Smoothness + c.StrongConvexity*float64(k)/2)
		std := m * sigma * math.Sqrt(2/eta)
		if r.Mechanism != accounting.Gaussian || r.Sampling != accounting.WithoutReplacement ||
			r.Neighbouring != accounting.ReplaceOne || r.BatchSize != m || r.DatasetSize != n ||
			r.SampleRate != float64(m)/n || r.Steps() != 1 || r.Sensitivity != c.Lipschitz ||
			math.Abs(r.StepSize-eta) > 1e-15 || math.Abs(r.NoiseStd-std) > 1e-12*std ||
			math.Abs(r.NoiseMultiplier-std/c.Lipschitz) > 1e-12*std {
			t.Fatalf("step %d: record %+v (want η %v, noise std %v)", k, r, eta, std)
		}
		if got := r.NoiseStd * math.Sqrt(r.StepSize/2) / float64(r.BatchSize); math.Abs(got-sigma) > 1e-12 {
			t.Errorf("σ recovered from the record = %v, want %v", got, sigma)
		}
		if err := r.Validate(); err != nil {
			t.Error(err)
		}
	}
	if o.Steps() != steps {
		t.Errorf("Steps() = %d, want %d", o.Steps(), steps)
	}
	for _, tc := range []struct {
		info data.BatchInfo
		want string
	}{
		{steptest.Drawn(data.SchemePoisson, n, (0.2)*float64(n), 0, 0), "without replacement"},
		{steptest.Drawn(data.SchemeShuffled, n, float64(m), 0, 0), "without replacement"},
	} {
		if _, err := o.Step(model, b, tc.info); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%+v: error %v, want one mentioning %q", tc.info, err, tc.want)
		}
	}
}

// A non-finite feature is a per-example problem, not the run's: the step clips that example's
// contribution to zero (counted in Stats.NonFinite) and the released iterate stays finite.
func TestDPSGLDNonFiniteExampleIsClippedToZero(t *testing.T) {
	const dim, classes, m = 5, 3, 3
	for _, bad := range []float32{float32(math.NaN()), float32(math.Inf(1))} {
		c, err := SoftmaxConstants(1, classes, 0.1, true)
		if err != nil {
			t.Fatal(err)
		}
		o, err := New(Config{Sigma: 1, Constants: c, Schedule: Decreasing{c.Smoothness, c.StrongConvexity}}, optim.NewSeededNoise(1))
		if err != nil {
			t.Fatal(err)
		}
		nw := steptest.NewNetwork(t, models.Spec{Kind: "logreg", Input: []int{dim}, Classes: classes}, 3)
		o.Init(nw.Params())
		x := make([]float32, m*dim)
		for i := range x {
			x[i] = 0.1
		}
		x[2*dim] = bad
		r, err := o.Step(nw, data.Batch{X: x, Y: []int32{0, 1, 2}, N: m}, steptest.Drawn(data.SchemeWithoutReplacement, 30, float64(m), 0, 0))
		if err != nil || r.Stats.NonFinite != 1 {
			t.Fatalf("feature %v: err = %v, NonFinite = %d; want no error and 1", bad, err, r.Stats.NonFinite)
		}
		for _, v := range nw.Params() {
			if math.IsNaN(float64(v)) || math.IsInf(float64(v), 0) {
				t.Fatalf("feature %v: the released iterate is not finite", bad)
			}
		}
	}
}
