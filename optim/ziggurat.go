package optim

import (
	"math"
	"math/rand/v2"
)

// The standard normal sampler is the 128-layer ziggurat of Marsaglia & Tsang (2000), "The
// Ziggurat Method for Generating Random Variables", J. Stat. Softw. 5(8), with r = 3.442619855899
// and layer area v = 9.91256303526217e-3 (their Table 1). Unlike rand.NormFloat64, which draws a
// 64-bit word for every 32 bits it uses, it draws two samples' 32-bit words from one Uint64: the
// generator (ChaCha8) dominates the cost, so this halves it.

const (
	zigR = 3.442619855899
	zigV = 9.91256303526217e-3
	zigM = 1 << 31
)

// zigTables holds the layer tables: a sample whose 32-bit word j lies in layer i (the low 7 bits)
// is accepted at once when |j| < k[i], and is then j·w[i]; f[i] = exp(−x_i²/2) at the layer's
// right edge x_i.
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

// zigSlow finishes a sample whose word j fell outside its layer's rectangle: the tail (layer 0)
// or the wedge of layer i. It draws fresh randomness from src until it accepts.
func zigSlow(src *rand.ChaCha8, j int32) float64 {
	for {
		i := j & 0x7f
		x := float64(j) * zig.w[i]
		if i == 0 {
			// Tail beyond r: Marsaglia (1964).
			for {
				x = -math.Log(unitOpen(src.Uint64())) / zigR
				y := -math.Log(unitOpen(src.Uint64()))
				if y+y >= x*x {
					break
				}
			}
			if j > 0 {
				return zigR + x
			}
			return -zigR - x
		}
		if zig.f[i]+unitOpen(src.Uint64())*(zig.f[i-1]-zig.f[i]) < math.Exp(-0.5*x*x) {
			return x
		}
		j = int32(uint32(src.Uint64()))
		if absInt32(j) < zig.k[j&0x7f] {
			return float64(j) * zig.w[j&0x7f]
		}
	}
}

// normal returns the standard normal sample for the 32-bit word j, drawing more from src only
// when j is rejected (about 1.2% of words).
func normal(src *rand.ChaCha8, j int32) float64 {
	i := j & 0x7f
	if absInt32(j) < zig.k[i] {
		return float64(j) * zig.w[i]
	}
	return zigSlow(src, j)
}

func absInt32(j int32) uint32 {
	if j < 0 {
		return uint32(-j)
	}
	return uint32(j)
}

// unitOpen maps a 64-bit word to a uniform number in (0, 1) with 53 bits.
func unitOpen(u uint64) float64 {
	return (float64(u>>11) + 0.5) / (1 << 53)
}

// addNormal sets dst[i] to (dst[i] + std·Z_i)·scale, rounding to float32 after the addition and
// after the multiplication (done in float64), for independent standard normal Z_i drawn from
// src, and reports whether every result is finite. The rectangle test of normal is written out
// in the loop so that it is inlined.
func addNormal(src *rand.ChaCha8, dst []float32, std, scale float64) bool {
	t := zig
	var chk float32 // stays 0 unless some result is NaN or infinite (y−y is then NaN)
	i := 0
	for ; i+1 < len(dst); i += 2 {
		u := src.Uint64()
		j0, j1 := int32(uint32(u)), int32(uint32(u>>32))
		var x0, x1 float64
		if l := j0 & 0x7f; absInt32(j0) < t.k[l] {
			x0 = float64(j0) * t.w[l]
		} else {
			x0 = zigSlow(src, j0)
		}
		if l := j1 & 0x7f; absInt32(j1) < t.k[l] {
			x1 = float64(j1) * t.w[l]
		} else {
			x1 = zigSlow(src, j1)
		}
		y0 := float32(float64(dst[i]+float32(std*x0)) * scale)
		y1 := float32(float64(dst[i+1]+float32(std*x1)) * scale)
		dst[i], dst[i+1] = y0, y1
		chk += (y0 - y0) + (y1 - y1)
	}
	if i < len(dst) {
		y := float32(float64(dst[i]+float32(std*normal(src, int32(uint32(src.Uint64()))))) * scale)
		dst[i] = y
		chk += y - y
	}
	return chk == 0
}
