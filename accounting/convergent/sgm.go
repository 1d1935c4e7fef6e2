package convergent

import (
	"math"
)

// sgmStandard returns D_α((1−q)·N(0,s²) + q·N(1,s²) ‖ N(0,s²)) for an integer order α ≥ 2: the
// usual sampled-Gaussian RDP (Mironov, Talwar & Zhang 2019, integer orders),
//
//	(1/(α−1))·log Σ_{k=0}^{α} C(α,k)·(1−q)^{α−k}·q^k·exp((k²−k)/(2s²)),
//
// summed in log space. It is the opposite direction to Definition 3.11 and bounds it from above
// (checked numerically), so it is the conservative default for Theorem 3.12.
func sgmStandard(q, s float64, alpha int) float64 {
	if q >= 1 {
		return float64(alpha) / (2 * s * s)
	}
	a := float64(alpha)
	lq, l1q := math.Log(q), math.Log1p(-q)
	terms := make([]float64, alpha+1)
	mx := math.Inf(-1)
	for k := 0; k <= alpha; k++ {
		fk := float64(k)
		lg1, _ := math.Lgamma(a + 1)
		lg2, _ := math.Lgamma(fk + 1)
		lg3, _ := math.Lgamma(a - fk + 1)
		t := lg1 - lg2 - lg3 + (a-fk)*l1q + fk*lq + (fk*fk-fk)/(2*s*s)
		terms[k] = t
		mx = math.Max(mx, t)
	}
	sum := 0.0
	for _, t := range terms {
		sum += math.Exp(t - mx)
	}
	return math.Max(0, (mx+math.Log(sum))/(a-1))
}

// sgmExact returns S_α(q, s) = D_α(N(0,s²) ‖ (1−q)·N(0,s²) + q·N(1,s²)) of Definition 3.11, by
// the 1-D integral (Chien & Li, App. A.3: "computed via numerical integral"),
//
//	(1/(α−1))·log E_{z~N(0,1)}[ (1 − q + q·exp((2sz − 1)/(2s²)))^{1−α} ],
//
// with the trapezoid rule on z ∈ [−12, 12] plus the tail mass times the integrand's bound
// (1−q)^{1−α}. The quadrature error is not certified, which is why it is an option.
func sgmExact(q, s, alpha float64) float64 {
	if q >= 1 {
		return alpha / (2 * s * s)
	}
	const zmax, n = 12.0, 9600
	h := 2 * zmax / n
	sum := 0.0
	for i := 0; i <= n; i++ {
		z := -zmax + float64(i)*h
		w := h
		if i == 0 || i == n {
			w = h / 2
		}
		ratio := 1 - q + q*math.Exp((2*s*z-1)/(2*s*s))
		sum += w * math.Exp(-z*z/2+(1-alpha)*math.Log(ratio))
	}
	sum /= math.Sqrt(2 * math.Pi)
	tail := math.Erfc(zmax/math.Sqrt2) * math.Exp((1-alpha)*math.Log1p(-q))
	return math.Max(0, math.Log(sum+tail)/(alpha-1))
}

// phiTable tabulates the per-step cost of Theorem 3.12 after the noise split (Eq. 19 with the split minimised per step),
//
//	φ_α(a) = min over β ∈ (0,1] of S_α(q, √β·s₀) + α·a²/(2σ²(1−β)),    s₀ = σ/u_b,
//
// on a = 0, Δ, 2Δ, …, with β over a fixed grid (any β gives a valid value; the grid only costs
// tightness). With paperLiteral the noise argument is β·s₀ as printed in eq. (19) (looser,
// since √β ≥ β). φ is non-decreasing in a, so reading the table at the next point up is
// valid.
type phiTable struct {
	step float64
	vals []float64
}

func newPhiTable(sgm func(s float64) float64, s0, alpha, sigma, aMax float64, points int, paperLiteral bool) phiTable {
	phi := phiFunc(sgm, s0, alpha, sigma, paperLiteral)
	t := phiTable{step: aMax / float64(points), vals: make([]float64, points+1)}
	for k := range t.vals {
		t.vals[k] = phi(float64(k) * t.step)
	}
	return t
}

// phiFunc returns a ↦ φ_α(a) minimised over a fixed β grid (dense near 0 and 1). Every β
// gives a valid value, so the result bounds φ_α from above.
func phiFunc(sgm func(s float64) float64, s0, alpha, sigma float64, paperLiteral bool) func(a float64) float64 {
	const nb = 400
	betas := make([]float64, 0, nb+40)
	for i := 1; i < nb; i++ {
		betas = append(betas, float64(i)/nb)
	}
	for k := 1; k <= 40; k++ {
		betas = append(betas, math.Pow(2, -float64(k)*0.5)/nb, 1-math.Pow(2, -float64(k)*0.5)/nb)
	}
	sv := make([]float64, len(betas))
	for i, b := range betas {
		arg := math.Sqrt(b) * s0
		if paperLiteral {
			arg = b * s0
		}
		sv[i] = sgm(arg)
	}
	at0 := sgm(s0)
	return func(a float64) float64 {
		if a <= 0 {
			return at0
		}
		best := math.Inf(1)
		for i, b := range betas {
			if v := sv[i] + alpha*a*a/(2*sigma*sigma*(1-b)); v < best {
				best = v
			}
		}
		return best
	}
}

// at returns φ at the next table point ≥ a (+Inf beyond the table).
func (t phiTable) at(a float64) float64 {
	if a <= 0 {
		return t.vals[0]
	}
	k := int(math.Ceil(a / t.step * (1 + 1e-12)))
	if k >= len(t.vals) {
		return math.Inf(1)
	}
	return t.vals[k]
}
