package kernels

// Per-channel loops over one example's channels-last tensor: rows positions of c channels each,
// row stride c. They are the passes of GroupNorm's forward and backward maps (Wu & He 2018,
// "Group Normalization", eqs. 1–2 and the per-channel affine map), written so that every element
// goes through the same operations in the same order as the scalar Go code beside them: each
// channel's float64 accumulator adds the rows in row order, and nothing is fused (no FMA: the
// scalar loops convert each product explicitly, which the Go spec says forbids fusing it, so a
// compiler that fuses, as Go's does for GOAMD64=v3 and on arm64, cannot either), so the vector
// kernels (amd64 with AVX, 16 channels at a time) and the scalar loops give the same bits.
// An example's result therefore depends on its own tensor alone, whichever kernel ran.

// ChanSum adds each channel's values, in float64, to acc: acc[ch] += Σ_p x[p·c+ch].
func ChanSum(x []float32, rows, c int, acc []float64) {
	if rows == 0 || c == 0 {
		return
	}
	_, _ = x[rows*c-1], acc[c-1]
	v := vecChans(c)
	for j := 0; j < v; j += 16 {
		chanSum16(&x[j], c, rows, &acc[j])
	}
	chanSumGo(x, rows, c, v, acc)
}

// ChanSqDev adds each channel's squared deviations from mean, in float64, to acc:
// acc[ch] += Σ_p (x[p·c+ch] − mean[ch])².
func ChanSqDev(x []float32, rows, c int, mean, acc []float64) {
	if rows == 0 || c == 0 {
		return
	}
	_, _, _ = x[rows*c-1], mean[c-1], acc[c-1]
	v := vecChans(c)
	for j := 0; j < v; j += 16 {
		chanSqDev16(&x[j], c, rows, &mean[j], &acc[j])
	}
	chanSqDevGo(x, rows, c, v, mean, acc)
}

// ChanNormalize writes x̂ = float32((x − mean)·inv) to xh and x̂·γ + β (in float32) to y, per
// channel.
func ChanNormalize(x, xh, y []float32, rows, c int, mean, inv []float64, gamma, beta []float32) {
	if rows == 0 || c == 0 {
		return
	}
	_, _, _ = x[rows*c-1], xh[rows*c-1], y[rows*c-1]
	_, _, _, _ = mean[c-1], inv[c-1], gamma[c-1], beta[c-1]
	v := vecChans(c)
	for j := 0; j < v; j += 16 {
		chanNorm16(&x[j], &xh[j], &y[j], c, rows, &mean[j], &inv[j], &gamma[j], &beta[j])
	}
	chanNormGo(x, xh, y, rows, c, v, mean, inv, gamma, beta)
}

// ChanDots adds Σ_p float64(xh·dy) (the product rounded in float32) to sg and Σ_p dy to sb, per
// channel.
func ChanDots(xh, dy []float32, rows, c int, sg, sb []float64) {
	if rows == 0 || c == 0 {
		return
	}
	_, _, _, _ = xh[rows*c-1], dy[rows*c-1], sg[c-1], sb[c-1]
	v := vecChans(c)
	for j := 0; j < v; j += 16 {
		chanDots16(&xh[j], &dy[j], c, rows, &sg[j], &sb[j])
	}
	chanDotsGo(xh, dy, rows, c, v, sg, sb)
}

// ChanAffineDiff writes ((a·dy) − b) − xh·d, in float32 and in that order, per channel to dx, or
// adds it to dx when add is set.
func ChanAffineDiff(xh, dy, dx []float32, rows, c int, a, b, d []float32, add bool) {
	if rows == 0 || c == 0 {
		return
	}
	_, _, _ = xh[rows*c-1], dy[rows*c-1], dx[rows*c-1]
	_, _, _ = a[c-1], b[c-1], d[c-1]
	v := vecChans(c)
	ad := 0
	if add {
		ad = 1
	}
	for j := 0; j < v; j += 16 {
		chanDx16(&xh[j], &dy[j], &dx[j], c, rows, &a[j], &b[j], &d[j], ad)
	}
	chanDxGo(xh, dy, dx, rows, c, v, a, b, d, add)
}

// vecChans is the number of leading channels the vector kernels take: a multiple of 16, or 0
// where they do not run.
func vecChans(c int) int {
	if !haveChanAVX {
		return 0
	}
	return c &^ 15
}

// The scalar loops, over channels from ch0 to c.

func chanSumGo(x []float32, rows, c, ch0 int, acc []float64) {
	if ch0 == c {
		return
	}
	acc = acc[:c]
	for p := 0; p < rows; p++ {
		row := x[p*c : (p+1)*c]
		for ch := ch0; ch < c; ch++ {
			acc[ch] += float64(row[ch])
		}
	}
}

func chanSqDevGo(x []float32, rows, c, ch0 int, mean, acc []float64) {
	if ch0 == c {
		return
	}
	mean, acc = mean[:c], acc[:c]
	for p := 0; p < rows; p++ {
		row := x[p*c : (p+1)*c]
		for ch := ch0; ch < c; ch++ {
			d := float64(row[ch]) - mean[ch]
			acc[ch] += float64(d * d) // the conversion forbids fusing the product into the sum
		}
	}
}

func chanNormGo(x, xh, y []float32, rows, c, ch0 int, mean, inv []float64, gamma, beta []float32) {
	if ch0 == c {
		return
	}
	mean, inv, gamma, beta = mean[:c], inv[:c], gamma[:c], beta[:c]
	for p := 0; p < rows; p++ {
		xr, hr, yr := x[p*c:(p+1)*c], xh[p*c:(p+1)*c], y[p*c:(p+1)*c]
		for ch := ch0; ch < c; ch++ {
			h := float32((float64(xr[ch]) - mean[ch]) * inv[ch])
			hr[ch] = h
			yr[ch] = float32(h*gamma[ch]) + beta[ch]
		}
	}
}

func chanDotsGo(xh, dy []float32, rows, c, ch0 int, sg, sb []float64) {
	if ch0 == c {
		return
	}
	sg, sb = sg[:c], sb[:c]
	for p := 0; p < rows; p++ {
		hr, dr := xh[p*c:(p+1)*c], dy[p*c:(p+1)*c]
		for ch := ch0; ch < c; ch++ {
			sg[ch] += float64(hr[ch] * dr[ch])
			sb[ch] += float64(dr[ch])
		}
	}
}

func chanDxGo(xh, dy, dx []float32, rows, c, ch0 int, a, b, d []float32, add bool) {
	if ch0 == c {
		return
	}
	a, b, d = a[:c], b[:c], d[:c]
	for p := 0; p < rows; p++ {
		hr, dr, out := xh[p*c:(p+1)*c], dy[p*c:(p+1)*c], dx[p*c:(p+1)*c]
		for ch := ch0; ch < c; ch++ {
			v := float32(a[ch]*dr[ch]) - b[ch] - float32(hr[ch]*d[ch])
			if add {
				out[ch] += v
			} else {
				out[ch] = v
			}
		}
	}
}
