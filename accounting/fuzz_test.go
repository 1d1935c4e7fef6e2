package accounting_test

import (
	"errors"
	"fmt"
	"math"
	"testing"

	"github.com/dptrain/dptrain/accounting"
	"github.com/dptrain/dptrain/accounting/gdp"
	"github.com/dptrain/dptrain/accounting/rdp"
)

// The values a fuzzed record's enumerations take: every declared one, none, and an unknown one.
var (
	fuzzMechanisms = []accounting.Mechanism{accounting.Gaussian, accounting.SampledWithRejectionGaussian,
		accounting.NonPrivate, "", "laplace"}
	fuzzSamplings = []accounting.Sampling{accounting.Poisson, accounting.FullBatch, accounting.WithoutReplacement,
		accounting.Shuffled, accounting.ShuffledOnce, accounting.PoissonWithRejection, "", "stratified"}
	fuzzNeighbourings = []accounting.Neighbouring{accounting.AddRemove, accounting.ReplaceOne, "", "swap"}
)

// fuzzBaseline is a realistic run the fuzzed record is composed after: 100 steps of DP-SGD at
// q = 0.01, σ = 1.1.
var fuzzBaseline = accounting.Step{Mechanism: accounting.Gaussian, Sampling: accounting.Poisson,
	Neighbouring: accounting.AddRemove, NoiseMultiplier: 1.1, SampleRate: 0.01, Count: 100}

// Step.Validate takes any record without panicking, and a record it accepts has the common
// fields every accountant relies on. The composition accountants never accept a record it
// refuses; a record they refuse leaves their ε as it was; one they accept never lowers ε
// (composition only adds privacy loss), and ε is finite and non-negative or an error.
func FuzzStepValidate(f *testing.F) {
	f.Add(uint8(0), uint8(0), uint8(0), 1.1, 256.0/60000, 2344, 0.0, 0, 60000, 0)
	f.Add(uint8(0), uint8(1), uint8(1), 4.0, 1.0, 10, 0.0, 1000, 1000, 0)
	f.Add(uint8(0), uint8(2), uint8(1), 1.0, 0.01, 1, 0.0, 600, 60000, 0)
	f.Add(uint8(1), uint8(5), uint8(0), 8.0, 200.0/60000, 7500, 0.0, 0, 60000, 131)
	f.Add(uint8(0), uint8(4), uint8(1), 2.0, 0.1, 0, 1.5, 100, 1000, 0)
	f.Add(uint8(2), uint8(0), uint8(0), 0.0, 0.01, 1, 0.0, 0, 0, 0)                     // non-private
	f.Add(uint8(0), uint8(0), uint8(0), 1e-300, 1e-300, 1, 0.0, 0, 0, 0)                // tiny
	f.Add(uint8(0), uint8(0), uint8(0), 1e300, 1.0, math.MaxInt, 0.0, 0, 0, 0)          // huge
	f.Add(uint8(0), uint8(0), uint8(0), 0.01, 1e-200, 1, 0.0, 0, 0, 0)                  // tiny σ and q
	f.Add(uint8(0), uint8(0), uint8(0), -1.0, -0.5, -3, -1.0, -1, -1, -1)               // negative
	f.Add(uint8(0), uint8(0), uint8(0), math.NaN(), math.NaN(), 1, math.NaN(), 0, 0, 0) // NaN
	f.Add(uint8(0), uint8(1), uint8(0), math.Inf(1), 1.0, 1, math.Inf(1), 0, 0, 0)      // +Inf
	f.Add(uint8(3), uint8(6), uint8(3), 1.0, 0.5, 1, 0.0, 5, 3, 0)                      // unknown names
	baseline := fuzzAccountants(f)
	f.Fuzz(func(t *testing.T, mech, sampling, neighbouring uint8, sigma, q float64, count int, smoothness float64, batch, dataset, minBatch int) {
		s := accounting.Step{
			Mechanism:       fuzzMechanisms[int(mech)%len(fuzzMechanisms)],
			Sampling:        fuzzSamplings[int(sampling)%len(fuzzSamplings)],
			Neighbouring:    fuzzNeighbourings[int(neighbouring)%len(fuzzNeighbourings)],
			NoiseMultiplier: sigma, SampleRate: q, Count: count, Smoothness: smoothness,
			BatchSize: batch, DatasetSize: dataset, MinBatchSize: minBatch,
		}
		err := s.Validate()
		if err == nil {
			checkValidated(t, s)
		}
		for _, b := range baseline {
			a, name := b.Clone(), b.Name()
			before, berr := a.Epsilon(1e-5)
			if berr != nil {
				t.Fatalf("%s: the baseline run has no ε: %v", name, berr)
			}
			cerr := a.Compose(s)
			if err != nil && cerr == nil {
				t.Fatalf("%s composed %+v, which Validate refuses: %v", name, s, err)
			}
			after, aerr := a.Epsilon(1e-5)
			if aerr == nil && (math.IsNaN(after.Epsilon) || math.IsInf(after.Epsilon, 0) || after.Epsilon < 0) {
				t.Fatalf("%s: ε = %v with no error after %+v (compose error %v)", name, after.Epsilon, s, cerr)
			}
			if cerr != nil {
				if aerr != nil || after.Epsilon != before.Epsilon {
					t.Fatalf("%s refused %+v (%v) but its ε changed from %v to %v (%v)", name, s, cerr, before.Epsilon, after.Epsilon, aerr)
				}
				continue
			}
			if aerr == nil && after.Epsilon < before.Epsilon*(1-1e-9) {
				t.Fatalf("%s: composing %+v lowered ε from %v to %v", name, s, before.Epsilon, after.Epsilon)
			}
		}
	})
}

// checkValidated fails unless s has what Validate promises of a record it accepts.
func checkValidated(t *testing.T, s accounting.Step) {
	t.Helper()
	ok := s.Mechanism != "" && s.Mechanism != accounting.NonPrivate &&
		s.NoiseMultiplier > 0 && !math.IsInf(s.NoiseMultiplier, 1) &&
		s.SampleRate > 0 && s.SampleRate <= 1 && s.Count >= 0 && s.Steps() >= 1 &&
		s.Smoothness >= 0 && !math.IsInf(s.Smoothness, 1)
	switch s.Sampling {
	case accounting.FullBatch:
		ok = ok && s.SampleRate == 1
	case accounting.PoissonWithRejection:
		ok = ok && s.MinBatchSize >= 1
	case accounting.WithoutReplacement:
		ok = ok && s.BatchSize > 0 && s.BatchSize <= s.DatasetSize
	case accounting.Poisson, accounting.Shuffled, accounting.ShuffledOnce:
	default:
		ok = false
	}
	if !ok {
		t.Fatalf("Validate accepted %+v", s)
	}
}

// fuzzAccountants are rdp and gdp with fuzzBaseline composed; each input composes into clones.
func fuzzAccountants(f *testing.F) []accounting.Accountant {
	r, err := rdp.New(accounting.Run{})
	if err != nil {
		f.Fatal(err)
	}
	g, err := gdp.New(accounting.Run{})
	if err != nil {
		f.Fatal(err)
	}
	as := []accounting.Accountant{r, g}
	for _, a := range as {
		if err := a.Compose(fuzzBaseline); err != nil {
			f.Fatal(err)
		}
	}
	return as
}

// Describe and RequirementError.Message take any declaration: no panic whatever the Fix
// format holds, and a wrapped refusal keeps the text that wraps it, with the refusal's fields
// named as name says.
func FuzzDescribe(f *testing.F) {
	f.Add("sgld", "Theorem 3.1", "the bound covers releasing the last iterate only",
		"set %s or use a composition accountant", "Run.LastIterateOnly", "privacy.release: final", "plan")
	f.Add("", "", "", "", "", "", "")
	f.Add("ulr", "Theorem 3.6", "x", "set %s to %s and %d %v %!", "Step.Sampling", "%s%%", "a: %w")
	f.Fuzz(func(t *testing.T, acct, theorem, reason, fix, field, key, prefix string) {
		re := &accounting.RequirementError{Accountant: acct, Theorem: theorem, Reason: reason, Fix: fix,
			Fields: []string{field, "Step.MinBatchSize"}}
		name := func(f string) string {
			if f == field {
				return key
			}
			return ""
		}
		if got := accounting.Describe(re, nil); got != re.Error() {
			t.Fatalf("Describe with no names = %q, want %q", got, re.Error())
		}
		wrapped := fmt.Errorf("%s: %w", prefix, re)
		if got, want := accounting.Describe(wrapped, name), prefix+": "+re.Message(name); got != want {
			t.Fatalf("Describe = %q, want %q", got, want)
		}
		if got := accounting.Describe(errors.New(reason), name); got != reason {
			t.Fatalf("Describe of a plain error = %q, want %q", got, reason)
		}
	})
}
