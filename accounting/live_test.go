package accounting_test

import (
	"encoding/json"
	"errors"
	"math"
	"sync"
	"testing"

	"github.com/dptrain/dptrain/accounting"
	"github.com/dptrain/dptrain/accounting/gdp"
	"github.com/dptrain/dptrain/accounting/rdp"
)

func build(name string) (accounting.Accountant, error) {
	switch name {
	case "rdp":
		return rdp.New(accounting.Run{})
	case "gdp":
		return gdp.New(accounting.Run{})
	}
	return nil, errors.New("unknown")
}

var (
	poisson = accounting.Step{Mechanism: accounting.Gaussian, Sampling: accounting.Poisson, Neighbouring: accounting.AddRemove, NoiseMultiplier: 1.1, SampleRate: 0.01, Count: 1}
	// gdp does not cover sampling without replacement; rdp does.
	wor = accounting.Step{Mechanism: accounting.Gaussian, Sampling: accounting.WithoutReplacement, Neighbouring: accounting.ReplaceOne,
		NoiseMultiplier: 2, SampleRate: 0.01, BatchSize: 10, DatasetSize: 1000, Count: 1}
)

// rdpAlone composes the same records into a lone accountant: the reference.
func rdpAlone(t *testing.T, steps ...accounting.Step) float64 {
	a, _ := rdp.New(accounting.Run{})
	for _, s := range steps {
		if err := a.Compose(s); err != nil {
			t.Fatal(err)
		}
	}
	g, err := a.Epsilon(1e-5)
	if err != nil {
		t.Fatal(err)
	}
	return g.Epsilon
}

func TestLiveRefusalAndLedger(t *testing.T) {
	l, err := accounting.NewLive([]string{"rdp", "gdp"}, build)
	if err != nil {
		t.Fatal(err)
	}
	for range 3 {
		if err := l.Compose(poisson); err != nil {
			t.Fatal(err)
		}
	}
	err = l.Compose(wor)
	var refused *accounting.RefusedError
	if !errors.As(err, &refused) || refused.Reasons["gdp"] == nil || refused.Reasons["rdp"] != nil {
		t.Fatalf("want gdp alone to refuse, got %v", err)
	}
	if err := l.Compose(poisson); err != nil {
		t.Fatalf("a later step must not repeat the refusal: %v", err)
	}
	// A malformed record changes nothing.
	bad := poisson
	bad.NoiseMultiplier = 0
	if err := l.Compose(bad); err == nil {
		t.Fatal("malformed record accepted")
	}
	gs, errs := l.Snapshot(1e-5)
	want := rdpAlone(t, poisson, poisson, poisson, wor, poisson)
	if errs[0] != nil || gs[0].Epsilon != want || gs[0].Accountant != "rdp" {
		t.Errorf("rdp: %+v, %v; want ε = %v", gs[0], errs[0], want)
	}
	if errs[1] == nil {
		t.Error("gdp: want the refusal reason, got a number")
	}
	ledger := l.Ledger()
	if len(ledger) != 3 || ledger[0].Count != 3 || ledger[1].Count != 1 || ledger[2].Count != 1 || l.Steps() != 5 {
		t.Fatalf("ledger %+v, steps %d", ledger, l.Steps())
	}
	// The ledger survives JSON, and replaying it restores ε exactly and the refusal.
	b, err := json.Marshal(ledger)
	if err != nil {
		t.Fatal(err)
	}
	var back []accounting.Step
	if err := json.Unmarshal(b, &back); err != nil {
		t.Fatal(err)
	}
	r, err := accounting.ReplayLive([]string{"rdp", "gdp"}, build, back)
	if err != nil {
		t.Fatal(err)
	}
	gs2, errs2 := r.Snapshot(1e-5)
	if gs2[0].Epsilon != want || errs2[1] == nil || r.Steps() != 5 {
		t.Errorf("replayed: %+v %v", gs2, errs2)
	}
}

func TestWouldOvershoot(t *testing.T) {
	l, _ := accounting.NewLive([]string{"rdp"}, build)
	big := poisson
	big.Count = 1000
	l.Compose(big)
	now := rdpAlone(t, big)
	next := rdpAlone(t, big, poisson)
	if !(next > now) {
		t.Fatalf("ε did not grow: %v then %v", now, next)
	}
	mid := (now + next) / 2
	for _, tc := range []struct {
		target float64
		want   bool
	}{{mid, true}, {next, false}, {now, true}, {next + 1, false}} {
		got, err := l.WouldOvershoot(poisson, tc.target, 1e-5, "rdp")
		if err != nil || got != tc.want {
			t.Errorf("target %v: %v, %v; want %v", tc.target, got, err, tc.want)
		}
	}
	if g, _ := l.Epsilon("rdp", 1e-5); g.Epsilon != now {
		t.Errorf("WouldOvershoot changed the live state: %v, want %v", g.Epsilon, now)
	}
	if _, err := l.WouldOvershoot(poisson, 1, 1e-5, "pld"); err == nil {
		t.Error("unknown mode accepted")
	}
	g, _ := accounting.NewLive([]string{"gdp"}, build)
	g.Compose(wor)
	if _, err := g.WouldOvershoot(poisson, 1, 1e-5, "gdp"); err == nil {
		t.Error("inapplicable stopping accountant gave an answer")
	}
}

func TestLiveConcurrentReaders(t *testing.T) {
	l, _ := accounting.NewLive([]string{"rdp", "gdp"}, build)
	var wg sync.WaitGroup
	for range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 50 {
				gs, _ := l.Snapshot(1e-5)
				for _, g := range gs {
					if math.IsNaN(g.Epsilon) {
						t.Error("NaN ε")
					}
				}
				_ = l.Ledger()
			}
		}()
	}
	for range 200 {
		l.Compose(poisson)
	}
	wg.Wait()
	if l.Ledger()[0].Count != 200 {
		t.Errorf("ledger %+v", l.Ledger())
	}
}

func TestNewLiveErrors(t *testing.T) {
	if _, err := accounting.NewLive([]string{"rdp", "rdp"}, build); err == nil {
		t.Error("duplicate accepted")
	}
	if _, err := accounting.NewLive([]string{"nope"}, build); err == nil {
		t.Error("unknown accepted")
	}
}
