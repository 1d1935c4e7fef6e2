//go:build !amd64

package kernels

// haveDenseFMA and haveDense512 are false off amd64: DenseRows is not available there.
const (
	haveDenseFMA = false
	haveDense512 = false
)

func denseFMA(x *float32, ldx int, w *float32, ldw int, y *float32, ldy int, rows, d, blocks int) {
	panic("kernels: DenseRows needs amd64 with AVX2 and FMA")
}

func denseFMA512(x *float32, ldx int, w *float32, ldw int, y *float32, ldy int, rows, d, blocks int) {
	panic("kernels: DenseRows needs amd64 with AVX2 and FMA")
}
