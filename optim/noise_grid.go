package optim

import "math"

// # The release grid
//
// A floating-point sampler does not draw from N(0, std²) but from a finite set of values, and
// a noisy sum computed in floating point takes values in a set that depends on the sum. Mironov
// (2012), "On significance of the least significant bits for differential privacy", showed
// that one output can then rule out inputs with certainty; Jin, McMurtry, Rubinstein &
// Ohrimenko (2022), "Are we there yet? Timing and floating-point attacks on differential
// privacy systems", found the same in deployed Gaussian samplers. The previous sampler here drew
// |Z| from 256 lattices of 2^23 points each and added std·Z to the sum in float32: for sums S
// and S' = S + e, with e one example's clipped contribution, a measurable fraction of the
// coordinates released for S were impossible under S' (TestLatticeAttack measures it).
//
// Every release of AddGaussian and AddGaussianScaled is now
//
//	o_j = fl32(round_Δ(S_j + N_j)) (then ·scale, rounded to float32 again)
//
// where
//   - N_j = std·Z_j in float64: each ziggurat layer is a lattice of 2^53 points (ziggurat.go)
//     and the tail's uniforms have 52 significant bits at every scale, so the support of N has
//     gaps of at most about 2^−51·max(|N|, std), float64's own resolution;
//   - the sum S_j + N_j is taken in float64, where the float32 S_j is exact;
//   - round_Δ rounds to the nearest multiple of Δ = 2^(⌊log₂ std⌋ − 20), ties to even: a power of
//     two in (2^−21·std, 2^−20·std], fixed by the public std alone (gridFor);
//   - fl32 rounds to float32, which maps grid values to float32 values exactly unless a float32
//     is coarser than Δ there, when it merges neighbouring grid cells.
//
// The argument. (1) With an exact Gaussian N and exact arithmetic, S + N is the Gaussian
// mechanism, and o = fl32(round_Δ(S + N))·scale is a fixed public function of its output: by
// post-processing o has the Gaussian mechanism's guarantee, with the same sensitivity, and the
// accountants need no change. (2) With the sampled N, every step from N_j to o_j is monotone
// non-decreasing in N_j, so for any input S_j the noise values giving an output o_j form an
// interval J(o_j, S_j), whose ends differ from those of the ideal preimage (a union of whole
// grid cells of width Δ, shifted by −S_j) by at most one float64 rounding of S_j + N_j,
// 2^−53·|S_j + N_j|. While |S_j + N_j| < 2^40·Δ (at least 2^19·std: far beyond a clipped sum
// over a noise multiplier of practical size) J has length at least Δ·(1 − 2^−12), and where
// it meets the range |N| ≲ 180·std of the sampler's support (the ideal Gaussian's mass beyond it
// is below e^−16000) it holds about 2^30·std/max(|N|, std) ≥ 2^22 support points, each of
// positive probability. So an output that some input can produce is possible under every
// other input: no coordinate rules out an alternative with certainty, whatever S and S' are.
// (3) What remains is the gap between the sampled and the ideal Gaussian law: on each J the
// sampled mass equals the ideal one up to the support points cut at J's two ends and the
// float64 rounding of the ends, a relative error of about 2^−29·max(|N|, std)/std +
// 2^−31·|S_j + N_j|/std (2^−29 to 2^−20 in practice), plus the ideal mass beyond the support's
// range. This bounded change of each output's probability, not an
// event of probability ≥ 0.7% that reveals the input, is what no floating-point sampler removes
// (Opacus's secure mode, after Holohan & Braghin (2021), "Secure random sampling in
// differential privacy", leaves a term of the same kind); it is not added to ε. A discrete
// Gaussian on the grid (Canonne, Kamath & Steinke 2020) would remove it at a higher price.
//
// The grid costs nothing in utility: round_Δ adds at most Δ/2 ≤ 2^−21·std to each coordinate,
// a variance 2^−40 times the noise's. An element already coarser than Δ (|S_j + N_j| ≥ 2^52·Δ)
// is left as it is, and NaN or ±Inf pass through to the finiteness check.

// gridShift is log₂(std/Δ) rounded down: the grid is 2^20 to 2^21 times finer than std.
const gridShift = 20

// grid is the release grid Δ·Z of one call, with the constants of its rounding.
type grid struct {
	delta float64 // Δ, a power of two
	c     float64 // 1.5·2^52·Δ: (y + c) − c rounds y to a multiple of Δ while |y| < lim
	lim   float64 // 2^51·Δ, or 0 when c overflows
	lim52 float64 // 2^52·Δ: every float64 at least this large is a multiple of Δ
}

// gridFor returns the release grid for noise of standard deviation std > 0: Δ =
// 2^(⌊log₂ std⌋ − 20), a function of the public std only (never of the data), clamped to the
// smallest float64 2^−1074 for std below 2^−1054.
func gridFor(std float64) grid {
	e := max(math.Ilogb(std)-gridShift, -1074)
	g := grid{delta: math.Ldexp(1, e), c: math.Ldexp(1.5, e+52), lim: math.Ldexp(1, e+51), lim52: math.Ldexp(1, e+52)}
	if math.IsInf(g.c, 0) {
		g.lim = 0
	}
	return g
}

// round returns the multiple of Δ nearest to y (ties to even), y itself when y is NaN, ±Inf or
// already a multiple of Δ by its magnitude.
func (g *grid) round(y float64) float64 {
	if math.Abs(y) < g.lim {
		return (y + g.c) - g.c
	}
	return g.roundLarge(y)
}

// roundLarge is round for |y| ≥ lim, where adding c would leave its binade (or c overflows).
func (g *grid) roundLarge(y float64) float64 {
	if math.Abs(y) < g.lim52 {
		return math.RoundToEven(y/g.delta) * g.delta // exact: Δ is a power of two and |y/Δ| < 2^52
	}
	return y
}
