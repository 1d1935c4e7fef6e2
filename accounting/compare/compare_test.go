package compare

import (
	"errors"
	"math"
	"slices"
	"testing"

	"github.com/dptrain/dptrain/accounting"
)

func poissonStep(t *testing.T) accounting.Step {
	t.Helper()
	s, err := Mechanism{
		Mechanism: accounting.Gaussian, Sampling: accounting.Poisson, Neighbouring: accounting.AddRemove,
		NoiseMultiplier: 1.1, BatchSize: 256, DatasetSize: 60000,
	}.Step()
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func TestMechanismDefaults(t *testing.T) {
	s := poissonStep(t)
	if s.SampleRate != 256.0/60000 || s.Sensitivity != 1 || s.NoiseStd != 1.1 || s.BatchSize != 256 {
		t.Errorf("step %+v: want q = 256/60000, C = 1, std 1.1, b = 256", s)
	}
	s, err := Mechanism{Sampling: accounting.FullBatch, DatasetSize: 100, Lipschitz: 2, NoiseMultiplier: 3}.Step()
	if err != nil || s.SampleRate != 1 || s.BatchSize != 100 || s.Sensitivity != 2 || s.NoiseStd != 6 {
		t.Errorf("full batch: %+v, %v: want q 1, b 100, C = L = 2, std 6", s, err)
	}
	if _, err := (Mechanism{Sampling: accounting.Poisson}).Step(); !errors.Is(err, ErrNoSampleRate) {
		t.Errorf("no sample rate: err %v, want ErrNoSampleRate", err)
	}
}

func TestCheckpoints(t *testing.T) {
	if got := Checkpoints(100, []int{50, 0, 200, 50, 10}, 0); !slices.Equal(got, []int{10, 50, 100}) {
		t.Errorf("Checkpoints = %v, want [10 50 100]", got)
	}
	if got := Checkpoints(10, nil, 4); !slices.Equal(got, []int{3, 5, 8, 10}) {
		t.Errorf("Checkpoints with 4 plot points = %v, want [3 5 8 10]", got)
	}
}

// Evaluate gives every certified mode's ε, grows with the steps, and "best" is the pointwise
// minimum over the certified modes, taken from the one attaining it at the end.
func TestEvaluateDPSGD(t *testing.T) {
	r, err := Evaluate(Spec{
		Run: accounting.Run{UpdateRule: "sgd"}, Step: poissonStep(t),
		Steps: 2000, At: []int{500}, Delta: 1e-5,
	})
	if err != nil {
		t.Fatal(err)
	}
	if r.Best == nil {
		t.Fatal("no best row")
	}
	certified := 0
	for _, row := range r.Modes {
		if !row.Applicable {
			if row.Reason == "" {
				t.Errorf("%s: not applicable without a reason", row.Mode)
			}
			continue
		}
		if len(row.At) != 2 || row.At[0].Steps != 500 || row.At[1].Steps != 2000 || !(row.At[0].Epsilon < row.At[1].Epsilon) {
			t.Errorf("%s: at %v, want ε at 500 below ε at 2000", row.Mode, row.At)
		}
		if row.Epsilon != row.At[1].Epsilon || math.IsNaN(row.Epsilon) {
			t.Errorf("%s: ε %v, final point %v", row.Mode, row.Epsilon, row.At[1])
		}
		if row.Label != accounting.Certified {
			continue
		}
		certified++
		if row.Epsilon < r.Best.Epsilon || row.At[0].Epsilon < r.Best.At[0].Epsilon {
			t.Errorf("%s: ε %v below best's %v", row.Mode, row.At, r.Best.At)
		}
		if row.Mode == r.Best.Source && row.Epsilon != r.Best.Epsilon {
			t.Errorf("best's source %s has ε %v, best %v", row.Mode, row.Epsilon, r.Best.Epsilon)
		}
	}
	if certified < 2 {
		t.Errorf("%d certified modes apply to Poisson DP-SGD, want at least 2 (rdp, pld)", certified)
	}
	if r.Best.Mode != "best" || r.Best.Label != accounting.Certified {
		t.Errorf("best row %+v", *r.Best)
	}
}

func TestBestIgnoresUncertified(t *testing.T) {
	rows := []Row{
		{Mode: "a", Label: accounting.Certified, Applicable: true, Epsilon: 3, Curve: []Point{{Steps: 1, Epsilon: 1}, {Steps: 2, Epsilon: 3}}},
		{Mode: "b", Label: accounting.Certified, Applicable: true, Epsilon: 2, Curve: []Point{{Steps: 1, Epsilon: 1.5}, {Steps: 2, Epsilon: 2}}},
		{Mode: "c", Label: accounting.Paper, Applicable: true, Epsilon: 0.1, Curve: []Point{{Steps: 1, Epsilon: 0.05}, {Steps: 2, Epsilon: 0.1}}},
		{Mode: "d", Label: accounting.Certified, Applicable: false, Epsilon: 0.01},
	}
	b := Best(rows)
	if b == nil || b.Source != "b" || b.Epsilon != 2 || b.Curve[0].Epsilon != 1 || b.Curve[1].Epsilon != 2 {
		t.Errorf("Best = %+v, want source b, ε 2, curve minimum [1 2]", b)
	}
	if rows[0].Curve[0].Epsilon != 1 || rows[1].Curve[0].Epsilon != 1.5 {
		t.Error("Best changed its input's curves")
	}
	if Best(rows[2:]) != nil {
		t.Error("Best over no applicable certified mode is not nil")
	}
}

// Evaluate reports a mode's failure as its reason, naming the declaration fields as Name says.
func TestEvaluateExplains(t *testing.T) {
	fail := func(name string, run accounting.Run) (accounting.Accountant, error) {
		return nil, &accounting.RequirementError{Reason: "needs Lipschitz", Fix: "declare %s", Fields: []string{"Run.Lipschitz"}}
	}
	r, err := Evaluate(Spec{
		Step: poissonStep(t), Steps: 10, Delta: 1e-5, Modes: []string{"x"}, Build: fail,
		Name: func(f string) string { return "--" + f + "!" },
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(r.Modes) != 1 || r.Modes[0].Applicable || r.Modes[0].Reason != "needs Lipschitz: declare --Run.Lipschitz!" || r.Best != nil {
		t.Errorf("report %+v", r)
	}
	if _, err := Evaluate(Spec{Steps: 0, Delta: 1e-5}); err == nil {
		t.Error("0 steps accepted")
	}
}
