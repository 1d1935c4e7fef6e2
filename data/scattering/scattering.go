package scattering

import (
	"fmt"
	"math/cmplx"
)

// Scattering is the scattering transform of H×W images at J scales and L angles. It is safe
// for concurrent use; each goroutine needs its own Workspace.
type Scattering struct {
	h, w, J, L int
	// n is the side of the padded square grid, a multiple of 2^J; top and left are the
	// reflect-padding offsets.
	n, top, left int
	outH, outW   int
	// r0, c0 are the first low-resolution cells kept: kymatio drops one on each side.
	r0, c0 int
	bank   bank
}

// New returns the transform of height×width images, or an error naming the parameter to change.
func New(height, width, J, L int) (*Scattering, error) {
	switch {
	case J < 1:
		return nil, fmt.Errorf("scattering: J = %d: use at least one scale (J = 2 is the usual choice for 28×28 and 32×32 images)", J)
	case L < 1:
		return nil, fmt.Errorf("scattering: L = %d: use at least one angle (L = 8 is the usual choice)", L)
	case height < 1<<J || width < 1<<J:
		return nil, fmt.Errorf("scattering: %d×%d images are smaller than 2^J = %d: lower J", height, width, 1<<J)
	case J > 6:
		return nil, fmt.Errorf("scattering: J = %d: at most 6 scales are supported", J)
	}
	// kymatio's compute_padding: ((size + 2^J) / 2^J + 1)·2^J per side, padded to a square here
	// so that one FFT size serves both axes.
	k := 1 << J
	pad := func(m int) int { return ((m+k)/k + 1) * k }
	n := max(pad(height), pad(width))
	s := &Scattering{h: height, w: width, J: J, L: L, n: n, top: (n - height) / 2, left: (n - width) / 2}
	// kymatio's unpadding keeps ⌊size/2^J⌋ cells.
	s.outH, s.outW = height/k, width/k
	// kymatio drops the first cell of its own padding; a side padded further (to make the grid
	// square) starts where the image does.
	s.r0, s.c0 = 1, 1
	if pad(height) != n {
		s.r0 = s.top / k
	}
	if pad(width) != n {
		s.c0 = s.left / k
	}
	s.bank = newBank(n, J, L)
	return s, nil
}

// Channels returns the number of output channels per input channel, 1 + J·L + L²·J(J−1)/2.
func (s *Scattering) Channels() int { return 1 + s.J*s.L + s.L*s.L*s.J*(s.J-1)/2 }

// OutShape returns the output shape [C·Channels(), ⌊H/2^J⌋, ⌊W/2^J⌋] for C input channels.
func (s *Scattering) OutShape(inChannels int) []int {
	return []int{inChannels * s.Channels(), s.outH, s.outW}
}

// Workspace holds one goroutine's buffers.
type Workspace struct {
	fft              []*fft2 // by resolution 0..J
	x, u1, u2, t, t2 []complex128
	out              []complex128
}

// NewWorkspace returns buffers for s.
func (s *Scattering) NewWorkspace() *Workspace {
	nn := s.n * s.n
	ws := &Workspace{x: make([]complex128, nn), u1: make([]complex128, nn), u2: make([]complex128, nn),
		t: make([]complex128, nn), t2: make([]complex128, nn), out: make([]complex128, nn)}
	for r := 0; r <= s.J; r++ {
		ws.fft = append(ws.fft, newFFT2(s.n>>r))
	}
	return ws
}

// Apply writes the transform of one CHW image src (inChannels·H·W values) to dst
// (inChannels·Channels()·⌊H/2^J⌋·⌊W/2^J⌋ values).
func (s *Scattering) Apply(dst, src []float32, inChannels int, ws *Workspace) {
	per := s.Channels() * s.outH * s.outW
	for c := range inChannels {
		s.apply1(dst[c*per:(c+1)*per], src[c*s.h*s.w:(c+1)*s.h*s.w], ws)
	}
}

func (s *Scattering) apply1(dst, img []float32, ws *Workspace) {
	n, J := s.n, s.J
	// Reflect padding (numpy 'reflect': the edge sample is not repeated).
	for r := range n {
		sr := reflect(r-s.top, s.h)
		for c := range n {
			ws.x[r*n+c] = complex(float64(img[sr*s.w+reflect(c-s.left, s.w)]), 0)
		}
	}
	ws.fft[0].forward(ws.x)
	ch := 0
	emit := func(spec []complex128, res int) {
		// spec is at resolution res (side n>>res): low-pass, subsample to 2^J, back to space.
		m := n >> res
		phi := s.bank.phi[res]
		for i := range m * m {
			ws.t2[i] = spec[i] * complex(phi[i], 0)
		}
		periodize(ws.out, ws.t2, m, 1<<(J-res))
		ws.fft[J].inverse(ws.out[:(n>>J)*(n>>J)])
		s.unpad(dst[ch*s.outH*s.outW:(ch+1)*s.outH*s.outW], ws.out, n>>J)
		ch++
	}
	emit(ws.x, 0)
	// Order 1, then order 2 (kymatio's output order: all order-1 channels, then all order-2).
	order2 := ch + J*s.L
	for j1 := range J {
		for t1 := range s.L {
			// U1 = |x ⋆ ψ_{j1,θ1}| subsampled by 2^j1, in Fourier.
			psi := s.bank.psi[j1][t1][0]
			for i := range n * n {
				ws.t[i] = ws.x[i] * complex(psi[i], 0)
			}
			m1 := n >> j1
			periodize(ws.u1, ws.t, n, 1<<j1)
			ws.fft[j1].inverse(ws.u1[:m1*m1])
			for i := range m1 * m1 {
				ws.u1[i] = complex(cmplx.Abs(ws.u1[i]), 0)
			}
			ws.fft[j1].forward(ws.u1[:m1*m1])
			emit(ws.u1, j1)
			save := ch
			ch = order2
			for j2 := j1 + 1; j2 < J; j2++ {
				for t2 := range s.L {
					psi2 := s.bank.psi[j2][t2][j1]
					for i := range m1 * m1 {
						ws.t[i] = ws.u1[i] * complex(psi2[i], 0)
					}
					m2 := n >> j2
					periodize(ws.u2, ws.t, m1, 1<<(j2-j1))
					ws.fft[j2].inverse(ws.u2[:m2*m2])
					for i := range m2 * m2 {
						ws.u2[i] = complex(cmplx.Abs(ws.u2[i]), 0)
					}
					ws.fft[j2].forward(ws.u2[:m2*m2])
					emit(ws.u2, j2)
				}
			}
			order2, ch = ch, save
		}
	}
}

// unpad copies the image's cells of the m×m low-resolution grid (real parts) to dst.
func (s *Scattering) unpad(dst []float32, src []complex128, m int) {
	r0, c0 := s.r0, s.c0
	for r := range s.outH {
		for c := range s.outW {
			dst[r*s.outW+c] = float32(real(src[(r+r0)*m+c+c0]))
		}
	}
}

// reflect maps an index outside [0, n) back by mirror reflection without repeating the edge.
func reflect(i, n int) int {
	if n == 1 {
		return 0
	}
	p := 2 * (n - 1)
	i %= p
	if i < 0 {
		i += p
	}
	if i >= n {
		i = p - i
	}
	return i
}
