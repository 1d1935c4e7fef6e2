package optim

import (
	"encoding/binary"
	"math"
	"math/bits"
)

// The standard normal sampler is the ziggurat of Marsaglia & Tsang (2000), "The Ziggurat Method
// for Generating Random Variables", J. Stat. Softw. 5(8), with 256 layers: r = 3.6541528853610088
// and layer area v = r·e^(−r²/2) + ∫_r^∞ e^(−x²/2) dx = 0.004928673233974658, so that the
// recursion closes on the top layer (checked by TestZigguratTables). 98.5% of samples take the
// rectangle test alone, against 97.2% with the paper's 128 layers. One 64-bit word per sample
// comes from a keystream (keystream.go).
//
// Each word is split into independent fields: bits 0–7 choose the layer, bit 8 the sign and bits
// 11–63 the 53-bit magnitude within the layer, so that a layer's samples are the float64
// roundings of a lattice of 2^53 points: about 2^−51·std apart, and every interval of the
// release grid (noise_grid.go) holds 2^30 or more of them. Marsaglia & Tsang's original reuses
// the layer bits as the low bits of the magnitude, which correlates a sample's value with its
// layer; Doornik (2005), "An Improved Ziggurat Method to Generate Normal Random Samples", shows
// that this fails statistical tests and separates the bits, as here. The tail beyond r
// (Marsaglia 1964) draws its uniforms with 52 significant bits at every scale (unitFine), so
// that its samples stay as dense as the layers' far out in the tail instead of thinning out
// where a 53-bit fixed-point uniform runs out of bits (beyond about 8σ).

const (
	zigLayers = 256
	zigR      = 3.6541528853610088
	zigV      = 0.004928673233974658
	zigBits   = 53 // magnitude bits per sample
	zigM      = 1 << zigBits
	zigLayer  = zigLayers - 1 // mask of the layer bits
	zigSign   = zigLayers     // the sign bit
)

// zigTables holds the layer tables: a sample in layer i with magnitude m < 2^53 is accepted at
// once when m < k[i], and is then m·w[i]; f[i] = exp(−x_i²/2) at the layer's right edge x_i.
type zigTables struct {
	k [zigLayers]uint64
	w [zigLayers]float64
	f [zigLayers]float64
}

// zig is computed once from the closed-form recursion and never written again.
var zig = newZigTables()

func newZigTables() *zigTables {
	t := new(zigTables)
	dn, tn := zigR, zigR
	q := zigV / math.Exp(-0.5*dn*dn)
	t.k[0] = uint64(dn / q * zigM)
	t.k[1] = 0
	t.w[0] = q / zigM
	t.w[zigLayers-1] = dn / zigM
	t.f[0] = 1
	t.f[zigLayers-1] = math.Exp(-0.5 * dn * dn)
	for i := zigLayers - 2; i >= 1; i-- {
		dn = math.Sqrt(-2 * math.Log(zigV/dn+math.Exp(-0.5*dn*dn)))
		t.k[i+1] = uint64(dn / tn * zigM)
		tn = dn
		t.f[i] = math.Exp(-0.5 * dn * dn)
		t.w[i] = dn / zigM
	}
	return t
}

// zigWord splits a 64-bit word into its layer, sign bit (0 or 1) and magnitude.
func zigWord(u uint64) (layer, sign, m uint64) {
	return u & zigLayer, u >> 8 & 1, u >> (64 - zigBits)
}

// zigSlow finishes a sample of layer i and magnitude m that fell outside its layer's rectangle:
// the tail (layer 0) or the wedge of layer i. It draws fresh words from src until it accepts and
// returns |Z|; the caller applies the sign, which is independent of the magnitude.
func zigSlow(src *keystream, i, m uint64) float64 {
	for {
		x := float64(m) * zig.w[i]
		if i == 0 {
			// Tail beyond r: Marsaglia (1964).
			for {
				x = -math.Log(unitFine(src)) / zigR
				y := -math.Log(unitFine(src))
				if y+y >= x*x {
					break
				}
			}
			return zigTail(x)
		}
		// The conversion forbids a fused multiply-add, which some platforms would use and
		// others not, so that a seeded stream gives the same noise everywhere.
		if zig.f[i]+float64(unitOpen(src.Uint64())*(zig.f[i-1]-zig.f[i])) < math.Exp(-0.5*x*x) {
			return x
		}
		i, _, m = zigWord(src.Uint64())
		if m < zig.k[i] {
			return float64(m) * zig.w[i]
		}
	}
}

// zigTail returns the tail sample r + x for an exponential excess x.
func zigTail(x float64) float64 { return zigR + x }

// unitOpen maps a 64-bit word to a uniform number in (0, 1) with 53 bits.
func unitOpen(u uint64) float64 {
	return (float64(u>>11) + 0.5) / (1 << 53)
}

// unitFineMaxExp bounds the binade of unitFine: 2^−961 < U, beyond any use (e^−665 for the
// tail's −ln U).
const unitFineMaxExp = 960

// unitFine returns a uniform number in (0, 1) with 52 significant bits at every scale down to
// 2^−961: the binade [2^−(e+1), 2^−e) is chosen with probability 2^−(e+1) from the leading zeros
// of the stream, and the value within it is the midpoint of one of 2^51 equal cells. −ln U is
// then resolved to about 2^−52 over its whole range, where a fixed-point uniform's −ln U becomes
// coarse as U approaches its smallest values.
func unitFine(src *keystream) float64 {
	e := 0
	for {
		u := src.Uint64()
		if u != 0 || e+64 > unitFineMaxExp {
			e = min(e+bits.LeadingZeros64(u), unitFineMaxExp)
			break
		}
		e += 64
	}
	return unitFineValue(e, src.Uint64()>>13)
}

// unitFineValue is (2^52 + 2m + 1)·2^−(e+53): the midpoint of cell m < 2^51 of the binade
// [2^−(e+1), 2^−e).
func unitFineValue(e int, m uint64) float64 {
	return math.Ldexp(float64(1<<52|(2*m+1)), -(e + 53))
}

// addNormal sets dst[i] to (round_Δ(dst[i] + std·Z_i))·scale for independent standard normal
// Z_i drawn from src, where the sum is taken in float64 and round_Δ is the release grid g
// (noise_grid.go); the grid value is rounded to float32 and then multiplied by scale in float64
// and rounded to float32 again. It reports whether every result is finite. The rectangle test
// is written out in the loop so that it is inlined, and finiteness is tracked on the results'
// exponent bits, an integer OR that adds no floating-point latency per sample.
func addNormal(src *keystream, dst []float32, std, scale float64, g *grid) bool {
	t := zig
	var sw [zigLayers]float64 // std·w[i]: the rectangle's sample scaled in one multiplication
	for i, w := range t.w {
		sw[i] = std * w
	}
	c, lim := g.c, g.lim
	var words [zigBlock]byte
	var bad uint32 // becomes 1 if some result has an all-ones exponent (NaN or ±Inf)
	for len(dst) > 0 {
		// A whole block of words is generated even for a short tail, so that the first m
		// values of a draw never depend on how many follow them (a prefix of a longer draw
		// from the same stream is the shorter draw).
		n := min(len(dst), zigBlock/8)
		src.fill(words[:])
		w := words[:8*n]
		d := dst[:n]
		for k, v := range d {
			u := binary.LittleEndian.Uint64(w[8*k:])
			i, m := u&zigLayer, u>>(64-zigBits)
			var x float64 // std·|Z|
			if m < t.k[i] {
				x = float64(float64(m) * sw[i]) // the conversion forbids fusing it into the sum below
			} else {
				x = float64(std * zigSlow(src, i, m))
			}
			x = math.Float64frombits(math.Float64bits(x) | (u&zigSign)<<(63-8)) // the sign bit
			y := float64(v) + x
			if math.Abs(y) < lim {
				y = (y + c) - c // round to the nearest multiple of Δ, ties to even
			} else {
				y = g.roundLarge(y)
			}
			r := float32(float64(float32(y)) * scale)
			d[k] = r
			bad |= (math.Float32bits(r)>>23&0xff + 1) >> 8
		}
		dst = dst[n:]
	}
	return bad == 0
}
