package train

import (
	"math"
	"strconv"
)

// FormatUp formats x with digits significant digits, rounded up rather than to nearest: a
// printed noise multiplier is never below the one the run used, so a run configured from the
// printed value has at least as much noise (round against privacy).
func FormatUp(x float64, digits int) string {
	if x == 0 || math.IsNaN(x) || math.IsInf(x, 0) || digits < 1 {
		return strconv.FormatFloat(x, 'g', digits, 64)
	}
	s := strconv.FormatFloat(x, 'g', digits, 64)
	if v, _ := strconv.ParseFloat(s, 64); v >= x {
		return s
	}
	// The nearest rounding went down: step up by one unit in the last printed digit.
	e := math.Floor(math.Log10(math.Abs(x)))
	unit := math.Pow(10, e-float64(digits-1))
	for up := x; ; up = math.Nextafter(up+unit/2, math.Inf(1)) {
		s = strconv.FormatFloat(math.Ceil(up/unit)*unit, 'g', digits, 64)
		if v, _ := strconv.ParseFloat(s, 64); v >= x {
			return s
		}
	}
}
