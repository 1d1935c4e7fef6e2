package optim

import (
	"math"
	"math/rand/v2"
)

// The standard normal sampler is the 128-layer ziggurat of Marsaglia & Tsang (2000), "The
// Ziggurat Method for Generating Random Variables", J. Stat. Softw. 5(8), with r = 3.442619855899
// and layer area v = 9.91256303526217e-3 (their Table 1), drawing one 32-bit word per sample and
// reading it in blocks from the generator.
//
// Each word is split into independent fields: bits 0–6 choose the layer, bit 7 the sign and bits
// 8–31 the 24-bit magnitude within the layer (a float32 result has 24 significant bits). Marsaglia
// & Tsang's original reuses the layer bits as the low bits of the magnitude, which correlates a
// sample's value with its layer; Doornik (2005), "An Improved Ziggurat Method to Generate Normal
// Random Samples", shows that this fails statistical tests and separates the bits, as here.

const (
	zigR    = 3.442619855899
	zigV    = 9.91256303526217e-3
	zigBits = 24 // magnitude bits per sample
	zigM    = 1 << zigBits
)

// zigTables holds the layer tables: a sample in layer i with magnitude m < 2^24 is accepted at
// once when m < k[i], and is then m·w[i]; f[i] = exp(−x_i²/2) at the layer's right edge x_i.
type zigTables struct {
	k [128]uint32
	w [128]float64
	f [128]float64
}

// zig is computed once from the closed-form recursion and never written again.
var zig = newZigTables()

func newZigTables() *zigTables {
	t := new(zigTables)
	dn, tn := zigR, zigR
	q := zigV / math.Exp(-0.5*dn*dn)
	t.k[0] = uint32(dn / q * zigM)
	t.k[1] = 0
	t.w[0] = q / zigM
	t.w[127] = dn / zigM
	t.f[0] = 1
	t.f[127] = math.Exp(-0.5 * dn * dn)
	for i := 126; i >= 1; i-- {
		dn = math.Sqrt(-2 * math.Log(zigV/dn+math.Exp(-0.5*dn*dn)))
		t.k[i+1] = uint32(dn / tn * zigM)
		tn = dn
		t.f[i] = math.Exp(-0.5 * dn * dn)
		t.w[i] = dn / zigM
	}
	return t
}

// zigSlow finishes a sample of layer i and magnitude m that fell outside its layer's rectangle:
// the tail (layer 0) or the wedge of layer i. It draws fresh words from src until it accepts and
// returns |Z|; the caller applies the sign, which is independent of the magnitude.
func zigSlow(src *rand.ChaCha8, i, m uint32) float64 {
	for {
		x := float64(m) * zig.w[i]
		if i == 0 {
			// Tail beyond r: Marsaglia (1964).
			for {
				x = -math.Log(unitOpen(src.Uint64())) / zigR
				y := -math.Log(unitOpen(src.Uint64()))
				if y+y >= x*x {
					break
				}
			}
			return zigR + x
		}
		if zig.f[i]+unitOpen(src.Uint64())*(zig.f[i-1]-zig.f[i]) < math.Exp(-0.5*x*x) {
			return x
		}
		u := uint32(src.Uint64())
		i, m = u&0x7f, u>>(32-zigBits)
		if m < zig.k[i] {
			return float64(m) * zig.w[i]
		}
	}
}

// unitOpen maps a 64-bit word to a uniform number in (0, 1) with 53 bits.
func unitOpen(u uint64) float64 {
	return (float64(u>>11) + 0.5) / (1 << 53)
}

// addNormal sets dst[i] to (dst[i] + std·Z_i)·scale, rounding to float32 after the addition and
// after the multiplication (done in float64), for independent standard normal Z_i drawn from
// src, and reports whether every result is finite. Each Uint64 gives two samples' words; the
// rectangle test is written out in the loop so that it is inlined, and finiteness is tracked
// on the results' exponent bits, an integer OR that adds no floating-point latency per sample.
func addNormal(src *rand.ChaCha8, dst []float32, std, scale float64) bool {
	t := zig
	var bad uint32 // becomes 1 if some result has an all-ones exponent (NaN or ±Inf)
	sample := func(u uint32, v float32) float32 {
		i, m := u&0x7f, u>>(32-zigBits)
		var x float64
		if m < t.k[i] {
			x = float64(m) * t.w[i]
		} else {
			x = zigSlow(src, i, m)
		}
		x = math.Float64frombits(math.Float64bits(x) | uint64(u&0x80)<<56) // bit 7: the sign
		y := float32(float64(v+float32(std*x)) * scale)
		bad |= (math.Float32bits(y)>>23&0xff + 1) >> 8
		return y
	}
	k := 0
	for ; k+1 < len(dst); k += 2 {
		u := src.Uint64()
		dst[k] = sample(uint32(u), dst[k])
		dst[k+1] = sample(uint32(u>>32), dst[k+1])
	}
	if k < len(dst) {
		dst[k] = sample(uint32(src.Uint64()), dst[k])
	}
	return bad == 0
}
