package optim

import (
	"encoding/binary"
	"math"
)

// The standard normal sampler is the ziggurat of Marsaglia & Tsang (2000), "The Ziggurat Method
// for Generating Random Variables", J. Stat. Softw. 5(8), with 256 layers: r = 3.6541528853610088
// and layer area v = r·e^(−r²/2) + ∫_r^∞ e^(−x²/2) dx = 0.004928673233974658, so that the recursion closes on the top layer (checked by
// TestZigguratTables). 98.5% of samples take the rectangle test alone, against 97.2% with the
// paper's 128 layers. One 32-bit word per sample comes from a keystream (keystream.go).
//
// Each word is split into independent fields: bits 0–7 choose the layer, bit 8 the sign and bits
// 9–31 the 23-bit magnitude within the layer (a float32 result has 24 significant bits, the
// first of which the layer fixes). Marsaglia
// & Tsang's original reuses the layer bits as the low bits of the magnitude, which correlates a
// sample's value with its layer; Doornik (2005), "An Improved Ziggurat Method to Generate Normal
// Random Samples", shows that this fails statistical tests and separates the bits, as here.

const (
	zigLayers = 256
	zigR      = 3.6541528853610088
	zigV      = 0.004928673233974658
	zigBits   = 23 // magnitude bits per sample
	zigM      = 1 << zigBits
	zigLayer  = zigLayers - 1 // mask of the layer bits
	zigSign   = zigLayers     // the sign bit
)

// zigTables holds the layer tables: a sample in layer i with magnitude m < 2^23 is accepted at
// once when m < k[i], and is then m·w[i]; f[i] = exp(−x_i²/2) at the layer's right edge x_i.
type zigTables struct {
	k [zigLayers]uint32
	w [zigLayers]float64
	f [zigLayers]float64
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
	t.w[zigLayers-1] = dn / zigM
	t.f[0] = 1
	t.f[zigLayers-1] = math.Exp(-0.5 * dn * dn)
	for i := zigLayers - 2; i >= 1; i-- {
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
func zigSlow(src *keystream, i, m uint32) float64 {
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
		u := src.Uint32()
		i, m = u&zigLayer, u>>(32-zigBits)
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
// src, and reports whether every result is finite. The rectangle test is written out in the
// loop so that it is inlined, and finiteness is tracked on the results' exponent bits, an
// integer OR that adds no floating-point latency per sample.
func addNormal(src *keystream, dst []float32, std, scale float64) bool {
	t := zig
	var sw [zigLayers]float64 // std·w[i]: the rectangle's sample scaled in one multiplication
	for i, w := range t.w {
		sw[i] = std * w
	}
	var words [zigBlock]byte
	var bad uint32 // becomes 1 if some result has an all-ones exponent (NaN or ±Inf)
	for len(dst) > 0 {
		n := min(len(dst), zigBlock/4)
		w := words[:4*n]
		src.fill(w)
		d := dst[:n]
		for k, v := range d {
			u := binary.LittleEndian.Uint32(w[4*k:])
			i, m := u&zigLayer, u>>(32-zigBits)
			var x float64 // std·|Z|
			if m < t.k[i] {
				x = float64(m) * sw[i]
			} else {
				x = std * zigSlow(src, i, m)
			}
			x = math.Float64frombits(math.Float64bits(x) | uint64(u&zigSign)<<(63-8)) // the sign bit
			y := float32(float64(v+float32(x)) * scale)
			d[k] = y
			bad |= (math.Float32bits(y)>>23&0xff + 1) >> 8
		}
		dst = dst[n:]
	}
	return bad == 0
}
