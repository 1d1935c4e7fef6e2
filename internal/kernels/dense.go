package kernels

// DenseFMA reports whether DenseRows runs on this CPU (amd64 with AVX2 and FMA3). Where it does
// not, callers compute each example's product with one BLAS call of a fixed shape instead.
func DenseFMA() bool { return haveDenseFMA }

// Pad16 rounds n up to a multiple of 16, DenseRows' column block.
func Pad16(n int) int { return (n + 15) / 16 * 16 }

// DenseRows writes y = x·w for rows rows: y is rows×n with row stride ldy, x rows×d with row
// stride ldx, and w d×np row-major with np = Pad16(n) (the columns beyond n zero or ignored).
// Every element of y is one chain of single-precision fused multiply-adds over k = 0 … d−1 in
// that order, computed the same way whichever rows share the call and wherever they are in
// memory: unlike a BLAS GEMM, whose kernels take a row's result along different paths by its
// offset in the matrix, one row's result here depends on that row and w alone. It runs four
// rows at a time against 16 columns held in registers, which reuses each loaded row of w four
// times and keeps it in cache across the rows. out is scratch of rows×np values, used when
// np ≠ n or ldy ≠ n. It panics unless DenseFMA.
func DenseRows(x []float32, ldx int, w []float32, np int, y []float32, ldy, rows, d, n int, out []float32) {
	if rows == 0 || n == 0 {
		return
	}
	if d == 0 {
		for r := 0; r < rows; r++ {
			clear(y[r*ldy : r*ldy+n])
		}
		return
	}
	_, _ = x[(rows-1)*ldx+d-1], w[d*np-1] // the assembly reads these, and nothing beyond
	if np == n && ldy == n {
		_ = y[rows*n-1]
		denseBlocks(&x[0], ldx, w, np, y, n, rows, d)
		return
	}
	_ = out[rows*np-1]
	denseBlocks(&x[0], ldx, w, np, out, np, rows, d)
	for r := 0; r < rows; r++ {
		copy(y[r*ldy:r*ldy+n], out[r*np:r*np+n])
	}
}

// denseBlocks runs the np/16 column blocks of DenseRows: 32 columns at a time on AVX-512, the
// last 16 (or all, without AVX-512) on AVX2. Each element is the same chain of fused
// multiply-adds on either kernel.
func denseBlocks(x *float32, ldx int, w []float32, np int, y []float32, ldy, rows, d int) {
	b16 := np / 16
	if haveDense512 && b16 >= 2 {
		b32 := b16 / 2
		denseFMA512(x, ldx, &w[0], np, &y[0], ldy, rows, d, b32)
		if b16%2 == 0 {
			return
		}
		denseFMA(x, ldx, &w[32*b32], np, &y[32*b32], ldy, rows, d, 1)
		return
	}
	denseFMA(x, ldx, &w[0], np, &y[0], ldy, rows, d, b16)
}
