package data

import (
	"errors"
	"fmt"
	"math"
)

// ChannelMoments holds, for one split, the sums over its examples of each example's
// per-channel mean and per-channel mean square, each example's two vectors clipped to l2 norm
// at most Clip: the statistics behind Tramèr & Boneh's data normalisation of ScatterNet
// features ("Differentially Private Learning Needs Better Features (or Much More Data)",
// Section 3, "normalization"), before any noise is added.
//
// Each example enters each sum once, through a vector computed from its own values alone and
// of norm at most Clip, so adding or removing one example moves each sum by at most Clip in
// l2 norm: a Gaussian mechanism on the sums has sensitivity Clip. Nothing here adds noise or
// keeps a ledger; a caller that releases the sums, or anything computed from them, must
// account for it.
type ChannelMoments struct {
	// Channels is the number of channels: the first axis of each example (CHW).
	Channels int
	// Clip is the l2 bound applied to each example's vectors; 0 means not clipped (the exact
	// statistics, with no bounded sensitivity).
	Clip float64
	// Mean and Square are the sums, over the examples, of each example's clipped vector of
	// channel means and of channel mean squares.
	Mean, Square []float64
	// N is the number of examples summed; NonFinite the number of them that held a NaN or
	// an infinity and contributed zero to both sums.
	N, NonFinite int
}

// ChannelMoments returns the clipped moment sums of s's examples, whose D values are
// channels equal consecutive blocks (CHW). clip must be positive and finite, or 0 for no
// clipping. Each example's vectors are computed in float64, alone, in a fixed order, so its
// contribution is the same whatever the other examples are.
func (s *Split) ChannelMoments(channels int, clip float64) (ChannelMoments, error) {
	if s.Len() == 0 {
		return ChannelMoments{}, errors.New("data: channel moments of an empty split: pass the training split")
	}
	if channels < 1 || s.D%channels != 0 {
		return ChannelMoments{}, fmt.Errorf("data: %d channels do not divide the %d values of an example: give the first axis of the example's shape", channels, s.D)
	}
	if clip < 0 || math.IsNaN(clip) || math.IsInf(clip, 0) {
		return ChannelMoments{}, fmt.Errorf("data: channel moments clip %v must be a finite number > 0 (or 0 for none)", clip)
	}
	m := ChannelMoments{Channels: channels, Clip: clip, Mean: make([]float64, channels), Square: make([]float64, channels), N: s.N}
	per := s.D / channels
	a, b := make([]float64, channels), make([]float64, channels)
	for i := range s.N {
		row := s.Row(i)
		finite := true
		for c := range channels {
			var s1, s2 float64
			for _, v := range row[c*per : (c+1)*per] {
				x := float64(v)
				s1 += x
				s2 += x * x
			}
			a[c], b[c] = s1/float64(per), s2/float64(per)
			if math.IsNaN(a[c]) || math.IsInf(a[c], 0) || math.IsNaN(b[c]) || math.IsInf(b[c], 0) {
				finite = false
			}
		}
		if !finite {
			m.NonFinite++
			continue
		}
		ka, kb := clipScale(a, clip), clipScale(b, clip)
		for c := range channels {
			m.Mean[c] += a[c] * ka
			m.Square[c] += b[c] * kb
		}
	}
	return m, nil
}

// clipScale returns min(1, clip/‖v‖₂), rounded down until the scaled norm is at most clip
// (1 when clip is 0).
func clipScale(v []float64, clip float64) float64 {
	if clip == 0 {
		return 1
	}
	var ss float64
	for _, x := range v {
		ss += x * x
	}
	n := math.Sqrt(ss)
	if n <= clip {
		return 1
	}
	k := clip / n
	for {
		var t float64
		for _, x := range v {
			t += (x * k) * (x * k)
		}
		if math.Sqrt(t) <= clip {
			return k
		}
		k = math.Nextafter(k, 0)
	}
}

// Standardization returns the per-channel mean and standard deviation that the sums give for
// a dataset of n examples: mean = Mean/n, var = max(Square/n − mean², 0), std = √(var + 1e-5)
// (the 1e-5 of Tramèr & Boneh's normalisation layer and of torch's batch norm). n is a public
// count (the declared dataset size), not a released one. Pass the result to
// Dataset.StandardizeWith.
func (m ChannelMoments) Standardization(n float64) (mean, std []float64, err error) {
	if !(n > 0) || math.IsInf(n, 0) {
		return nil, nil, fmt.Errorf("data: standardization over n = %v examples: n must be a positive count", n)
	}
	mean, std = make([]float64, m.Channels), make([]float64, m.Channels)
	for c := range m.Channels {
		mu, sq := m.Mean[c]/n, m.Square[c]/n
		if math.IsNaN(mu) || math.IsInf(mu, 0) || math.IsNaN(sq) || math.IsInf(sq, 0) {
			return nil, nil, fmt.Errorf("data: channel %d has a non-finite moment (mean %v, square %v)", c, mu, sq)
		}
		mean[c] = mu
		std[c] = math.Sqrt(math.Max(sq-mu*mu, 0) + 1e-5)
	}
	return mean, std, nil
}
