package optim

import (
	"math"
	"testing"
)

func TestSchedules(t *testing.T) {
	step, err := NewStepDecay(0.1, 0.5, 10)
	if err != nil {
		t.Fatal(err)
	}
	cos, err := NewCosine(1, 0, 110, 10)
	if err != nil {
		t.Fatal(err)
	}
	cosNoWarm, err := NewCosine(0.4, 0.1, 100, 0)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		s    Schedule
		k    int
		want float64
	}{
		{"constant", Constant{0.3}, 12345, 0.3},
		{"step k=0", step, 0, 0.1},
		{"step k=9", step, 9, 0.1},
		{"step k=10", step, 10, 0.05},
		{"step k=25", step, 25, 0.025},
		{"warmup k=0", cos, 0, 0.1},
		{"warmup k=4", cos, 4, 0.5},
		{"warmup k=9", cos, 9, 1},
		{"cosine start", cos, 10, 1},
		{"cosine quarter", cos, 35, 0.5 * (1 + math.Cos(math.Pi/4))},
		{"cosine half", cos, 60, 0.5},
		{"cosine end", cos, 110, 0},
		{"cosine after", cos, 500, 0},
		{"cosine min", cosNoWarm, 50, 0.25},
		{"cosine min end", cosNoWarm, 100, 0.1},
	} {
		if got := tc.s.StepSize(tc.k); math.Abs(got-tc.want) > 1e-12 {
			t.Errorf("%s: η_%d = %v, want %v", tc.name, tc.k, got, tc.want)
		}
	}
}

func TestScheduleErrors(t *testing.T) {
	for _, f := range []func() error{
		func() error { _, err := NewStepDecay(0, 0.5, 1); return err },
		func() error { _, err := NewStepDecay(0.1, 1.5, 1); return err },
		func() error { _, err := NewStepDecay(0.1, 0.5, 0); return err },
		func() error { _, err := NewCosine(0.1, 0.2, 10, 0); return err },
		func() error { _, err := NewCosine(0.1, 0, 10, 10); return err },
		func() error { _, err := NewCosine(math.Inf(1), 0, 10, 0); return err },
	} {
		if f() == nil {
			t.Error("invalid schedule accepted")
		}
	}
}
