package convergent

import "math"

// growth is the map g(x) = x + coef·x^λ on x ≥ 0 of Lemma 3.8 (coef = ηL for a gradient step
// with (L, λ)-Hölder gradients). With λ = 1 it is the linear map x ↦ (1+coef)·x of Lemma 3.4,
// where coef may be 0 (convex) or −ηm (strongly convex).
type growth struct {
	coef, lambda float64
}

// apply returns g(x).
func (g growth) apply(x float64) float64 {
	if g.lambda == 1 {
		return x + g.coef*x
	}
	return x + g.coef*math.Pow(x, g.lambda)
}

// inverse returns h(z) = g⁻¹(z) (Lemma 3.9), rounded down: g(inverse(z)) ≤ z. Lemma 3.9 gives
// closed forms for λ = 1 and λ = 1/2; otherwise bisection on [0, z], which is exact to the last
// bit because g is increasing and g(x) ≥ x.
func (g growth) inverse(z float64) float64 {
	if z <= 0 {
		return 0
	}
	lo, hi := 0.0, z
	switch {
	case g.lambda == 1:
		x := z / (1 + g.coef)
		for x > 0 && g.apply(x) > z {
			x = math.Nextafter(x, 0)
		}
		return x
	case g.lambda == 0.5:
		r := (-g.coef + math.Sqrt(g.coef*g.coef+4*z)) / 2
		x := r * r
		for x > 0 && g.apply(x) > z {
			x = math.Nextafter(x, 0)
		}
		return x
	}
	for range 200 {
		mid := lo + (hi-lo)/2
		if mid <= lo || mid >= hi {
			break
		}
		if g.apply(mid) <= z {
			lo = mid
		} else {
			hi = mid
		}
	}
	return lo
}
