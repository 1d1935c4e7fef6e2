package train

import (
	"encoding/json"
	"math"
)

// MarshalJSON writes ε as null, with no label, when the accountant refused the run (Error is
// set) or ε is not finite: a refusing accountant has no ε, and 0 would read as perfect privacy.
func (e ModeEpsilon) MarshalJSON() ([]byte, error) {
	type plain ModeEpsilon
	out := struct {
		plain
		Epsilon *float64 `json:"epsilon"`
	}{plain: plain(e)}
	if e.Error == "" && !math.IsNaN(e.Epsilon) && !math.IsInf(e.Epsilon, 0) {
		out.Epsilon = &e.Epsilon
	} else {
		out.Label = ""
		if e.Error == "" {
			out.Error = "ε is " + ff(e.Epsilon)
		}
	}
	return json.Marshal(out)
}
