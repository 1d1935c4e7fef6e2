//go:build !amd64

package kernels

// haveChanAVX is false off amd64: the scalar loops run every channel.
const haveChanAVX = false

func chanSum16(x *float32, ld, rows int, acc *float64)         { panic("unreachable") }
func chanSqDev16(x *float32, ld, rows int, mean, acc *float64) { panic("unreachable") }
func chanNorm16(x, xh, y *float32, ld, rows int, mean, inv *float64, g, b *float32) {
	panic("unreachable")
}
func chanDots16(xh, dy *float32, ld, rows int, sg, sb *float64)             { panic("unreachable") }
func chanDx16(xh, dy, dx *float32, ld, rows int, a, b, d *float32, add int) { panic("unreachable") }
