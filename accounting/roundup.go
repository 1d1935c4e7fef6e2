package accounting

import "math"

// RoundUp moves x up by a relative 1e-12 and four ulps, against the roundings of the
// computation that produced it (the privacy contract of this package: round against privacy, never
// under-report). It is used on every RDP value and every RDP→(ε, δ) conversion.
func RoundUp(x float64) float64 {
	if math.IsInf(x, 0) || math.IsNaN(x) {
		return x
	}
	x += math.Abs(x) * 1e-12
	for range 4 {
		x = math.Nextafter(x, math.Inf(1))
	}
	return x
}
