package core

import (
	"math"

	"github.com/dptrain/dptrain/data"
)

// Arithmetic that both engines compute: the same function, so the same bits.

// LogSumExp is log Σ_k exp(z_k) in float64, shifted by the row's maximum.
func LogSumExp(z []float32) float64 {
	m := math.Inf(-1)
	for _, v := range z {
		m = math.Max(m, float64(v))
	}
	var se float64
	for _, v := range z {
		se += math.Exp(float64(v) - m)
	}
	return m + math.Log(se)
}

// ScoreRow returns the arg-max of a row of logits and, for a label y ≥ 0, adds the row's
// softmax cross-entropy (in float64) to s.Loss and counts a correct arg-max in s.Correct.
func ScoreRow(row []float32, y int, s *data.Stats) int {
	best := 0
	mx := float64(row[0])
	for k, v := range row {
		if float64(v) > mx {
			mx, best = float64(v), k
		}
	}
	if y >= 0 {
		var se float64
		for _, v := range row {
			se += math.Exp(float64(v) - mx)
		}
		s.Loss += mx + math.Log(se) - float64(row[y])
		if best == y {
			s.Correct++
		}
	}
	return best
}

// GroupNormEpsilon is added to the group variance (Wu & He 2018, eq. 1).
const GroupNormEpsilon = 1e-5

// Transpose writes the transpose of the rows×cols matrix src to dst (cols×rows).
func Transpose(src, dst []float32, rows, cols int) {
	for i := 0; i < rows; i++ {
		for j, v := range src[i*cols : (i+1)*cols] {
			dst[j*rows+i] = v
		}
	}
}
