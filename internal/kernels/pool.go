package kernels

import "math"

// OrderedKey maps a float32 to an int32 in the same order (−0 and +0 to the same key, as they
// compare equal): the sign-magnitude bits with the magnitude bits of negative numbers flipped.
// NaNs map beyond ±Inf; max pooling's output is NaN for a window holding one whatever index
// its gradient goes to.
func OrderedKey(f float32) int32 {
	u := int32(math.Float32bits(f + 0)) // f + 0 turns −0 into +0
	return u ^ int32(uint32(u>>31)>>1)
}

// MaxPairs is the first pass of a 2×2, stride-1 max pool on a channels-last row: for each t < n
// it writes max(a[t], b[t]) (Go's max) to m[t], the larger OrderedKey to k[t], and to i[t] the
// index of the pair's first maximum, base + t, or base + t + c when b[t]'s key is the larger
// (b is a's row c elements later, so b[t] is the next pixel's same channel).
func MaxPairs(a, b, m []float32, k, i []int32, n int, base, c int32) {
	a, b, m, k, i = a[:n], b[:n], m[:n], k[:n], i[:n]
	v := vecLen(n)
	if v > 0 {
		maxPairsVec(&a[0], &b[0], &m[0], &k[0], &i[0], v, base, c)
	}
	for t := v; t < n; t++ {
		ka, kb := OrderedKey(a[t]), OrderedKey(b[t])
		right := int32(uint64(int64(ka)-int64(kb))>>63) * c // c if kb > ka
		m[t], k[t], i[t] = max(a[t], b[t]), max(ka, kb), base+int32(t)+right
	}
}

// MaxRows is the second pass: for each t it writes max(pm[t], cm[t]) (Go's max) to y[t] and to
// arg[t] ci[t] when ck[t] > pk[t], else pi[t] (the first maximum of the window in row-major
// order, the upper pair winning ties).
func MaxRows(y []float32, arg []int32, pm, cm []float32, pk, ck, pi, ci []int32) {
	n := len(y)
	arg, pm, cm, pk, ck, pi, ci = arg[:n], pm[:n], cm[:n], pk[:n], ck[:n], pi[:n], ci[:n]
	v := vecLen(n)
	if v > 0 {
		maxRowsVec(&y[0], &arg[0], &pm[0], &cm[0], &pk[0], &ck[0], &pi[0], &ci[0], v)
	}
	for t := v; t < n; t++ {
		sel := int32(uint64(int64(pk[t])-int64(ck[t])) >> 63) // 1 if ck > pk
		y[t], arg[t] = max(pm[t], cm[t]), pi[t]+(ci[t]-pi[t])*sel
	}
}
