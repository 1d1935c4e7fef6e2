package train

import (
	"encoding/json"
	"math"
	"testing"

	"github.com/dptrain/dptrain/accounting"
)

func TestModeEpsilonJSON(t *testing.T) {
	tests := []struct {
		name string
		in   ModeEpsilon
		want string
	}{
		{"certified", ModeEpsilon{Mode: "rdp", Label: accounting.Certified, Epsilon: 2.5, Delta: 1e-5, Order: 8},
			`{"mode":"rdp","label":"certified","delta":0.00001,"order":8,"epsilon":2.5}`},
		{"refused", ModeEpsilon{Mode: "pld", Label: accounting.Certified, Epsilon: math.NaN(), Delta: 1e-5, Error: "shuffled batches"},
			`{"mode":"pld","delta":0.00001,"error":"shuffled batches","epsilon":null}`},
		{"refused with a zero", ModeEpsilon{Mode: "pld", Epsilon: 0, Delta: 1e-5, Error: "no"},
			`{"mode":"pld","delta":0.00001,"error":"no","epsilon":null}`},
		{"infinite", ModeEpsilon{Mode: "gdp", Label: accounting.Certified, Epsilon: math.Inf(1), Delta: 1e-5},
			`{"mode":"gdp","delta":0.00001,"error":"ε is +Inf","epsilon":null}`},
	}
	for _, tc := range tests {
		b, err := json.Marshal(tc.in)
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		if string(b) != tc.want {
			t.Errorf("%s: %s, want %s", tc.name, b, tc.want)
		}
	}
}
