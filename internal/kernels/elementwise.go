package kernels

import "math"

// Element-wise loops of the direct executor's forward and backward passes. Each element goes
// through the same operations as in the scalar loop beside it, so the vector kernels (amd64
// with AVX2, 8 elements at a time) and the scalar loops give the same bits.

// ReLU writes max(x, 0) to y with Go's max: +0 for −0 and for negative x; a NaN stays a NaN
// (with its sign bit cleared, as Go's max compiles on amd64).
func ReLU(x, y []float32) {
	y = y[:len(x)]
	v := vecLen(len(x))
	if v > 0 {
		reluVec(&x[0], &y[0], v)
	}
	for t := v; t < len(x); t++ {
		y[t] = max(x[t], 0)
	}
}

// ReLUGrad writes dy to dx where x's sign bit is clear and +0 where it is set: ReLU's derivative,
// 1 on x ≥ +0 (and on NaN with a clear sign bit), taken bit-wise so that it never makes a NaN.
func ReLUGrad(x, dy, dx []float32) {
	dy, dx = dy[:len(x)], dx[:len(x)]
	v := vecLen(len(x))
	if v > 0 {
		reluGradVec(&x[0], &dy[0], &dx[0], v)
	}
	for t := v; t < len(x); t++ {
		keep := uint32(int32(^math.Float32bits(x[t])) >> 31)
		dx[t] = math.Float32frombits(math.Float32bits(dy[t]) & keep)
	}
}

// Add adds a to y element-wise: y[t] += a[t].
func Add(y, a []float32) {
	y = y[:len(a)]
	v := vecLen(len(a))
	if v > 0 {
		addVec(&y[0], &a[0], v)
	}
	for t := v; t < len(a); t++ {
		y[t] += a[t]
	}
}

// Add2 writes a + b to y element-wise.
func Add2(y, a, b []float32) {
	y, b = y[:len(a)], b[:len(a)]
	v := vecLen(len(a))
	if v > 0 {
		add2Vec(&y[0], &a[0], &b[0], v)
	}
	for t := v; t < len(a); t++ {
		y[t] = a[t] + b[t]
	}
}

// AddScaled64 adds float64(c·v[t]) to s[t], the product rounded in float32 first: one
// example's clipped contribution added to a float64 sum.
func AddScaled64(s []float64, c float32, v []float32) {
	s = s[:len(v)]
	n := vecLen(len(v))
	if n > 0 {
		addScaled64Vec(&s[0], c, &v[0], n)
	}
	for t := n; t < len(v); t++ {
		s[t] += float64(c * v[t])
	}
}

// vecLen is the number of leading elements the vector kernels take: a multiple of 8, or 0 where
// they do not run.
func vecLen(n int) int {
	if !haveVecAVX2 {
		return 0
	}
	return n &^ 7
}
