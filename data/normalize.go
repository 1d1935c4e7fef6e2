package data

import (
	"fmt"
	"math"
)

// Readers return pixels scaled to [0, 1] (byte/255, recorded as "scale-unit" in
// Dataset.Preprocessing). The methods below transform both splits in place and record what
// they did, so that a report can say exactly what the model saw.

// Standardize maps each channel c of every example to (x − Mean[c]) / Std[c] with the
// published statistics of d's dataset: MNIST 0.1307/0.3081, Fashion-MNIST 0.2860/0.3530,
// CIFAR-10 (0.4914, 0.4822, 0.4465)/(0.2470, 0.2435, 0.2616). It is a fixed per-record map (the
// constants are public, not computed from the private data), so it costs no privacy.
func (d *Dataset) Standardize() error {
	spec, err := Lookup(d.Name)
	if err != nil || spec.Mean == nil {
		return fmt.Errorf("data: no published mean/std for dataset %q; use StandardizeWith with constants that are public", d.Name)
	}
	return d.StandardizeWith(spec.Mean, spec.Std)
}

// StandardizeWith maps each channel c to (x − mean[c]) / std[c]. The channel is the first
// axis of d.Shape (CHW); mean and std must have one entry per channel, or one entry for all.
// The constants must not be computed from the private data without accounting for it.
func (d *Dataset) StandardizeWith(mean, std []float64) error {
	if d.applied("standardize") {
		return fmt.Errorf("data: %s is already standardized; standardize once", d.Name)
	}
	channels := 1
	if len(d.Shape) > 1 {
		channels = d.Shape[0]
	}
	if len(mean) != len(std) || (len(mean) != channels && len(mean) != 1) {
		return fmt.Errorf("data: standardize %s: got %d means and %d stds, want %d (one per channel) or 1", d.Name, len(mean), len(std), channels)
	}
	for _, s := range std {
		if !(s > 0) || math.IsInf(s, 0) {
			return fmt.Errorf("data: standardize %s: std %v must be positive and finite", d.Name, s)
		}
	}
	per := d.Dim() / channels
	for _, s := range d.splits() {
		for i := range s.N {
			row := s.Row(i)
			for c := range channels {
				k := c
				if len(mean) == 1 {
					k = 0
				}
				m, inv := float32(mean[k]), float32(1/std[k])
				seg := row[c*per : (c+1)*per]
				for j := range seg {
					seg[j] = (seg[j] - m) * inv
				}
			}
		}
	}
	d.Preprocessing = append(d.Preprocessing, "standardize")
	return nil
}

// BoundNorm rescales every example x to x·min(1, r/‖x‖₂), so that all have l2 norm at most r
// (for Ryffel, Bach & Pointcheval's logistic regression, Section 5.1: a per-record map, hence free of privacy cost, that makes the
// Lipschitz and smoothness constants of logistic regression public: L = √2·r, β = r²/2).
// The norm is computed in float64 and the scale rounded down, so ‖x‖ ≤ r holds in float32.
func (d *Dataset) BoundNorm(r float64) error {
	if !(r > 0) || math.IsInf(r, 0) {
		return fmt.Errorf("data: feature norm bound %v must be positive and finite", r)
	}
	for _, s := range d.splits() {
		s.BoundNorm(r)
	}
	d.Preprocessing = append(d.Preprocessing, fmt.Sprintf("bound-norm(%g)", r))
	return nil
}

// BoundNorm rescales each row of s to l2 norm at most r; see Dataset.BoundNorm.
func (s *Split) BoundNorm(r float64) {
	for i := range s.N {
		row := s.Row(i)
		n := l2(row)
		if n <= r {
			continue
		}
		scale := r / n
		for j := range row {
			row[j] = float32(float64(row[j]) * scale)
		}
		// float32 rounding can leave the norm a hair above r: shrink until it is not.
		for l2(row) > r {
			for j := range row {
				row[j] = float32(float64(row[j]) * (1 - 1e-6))
			}
		}
	}
}

// MaxNorm returns the largest l2 norm of a row of s.
func (s *Split) MaxNorm() float64 {
	m := 0.0
	for i := range s.N {
		m = math.Max(m, l2(s.Row(i)))
	}
	return m
}

func l2(x []float32) float64 {
	var ss float64
	for _, v := range x {
		ss += float64(v) * float64(v)
	}
	return math.Sqrt(ss)
}

// Normalization modes accepted by Dataset.Normalize.
const (
	// NormalizeUnit keeps pixels in [0, 1], as the readers return them.
	NormalizeUnit = "unit"
	// NormalizeStandard standardises with the dataset's published mean and std.
	NormalizeStandard = "standard"
	// NormalizeNone gives image pixels their raw byte values 0..255.
	NormalizeNone = "none"
)

// Normalize applies one of the modes "unit" (the readers' [0, 1] scaling, a no-op),
// "standard" (Standardize) or "none" (image pixels back to 0..255; a no-op for data that was
// not scaled).
func (d *Dataset) Normalize(mode string) error {
	switch mode {
	case NormalizeUnit, "":
		return nil
	case NormalizeStandard, "standardize":
		return d.Standardize()
	case NormalizeNone:
		if len(d.Preprocessing) == 0 {
			return nil
		}
		if len(d.Preprocessing) != 1 || d.Preprocessing[0] != "scale-unit" {
			return fmt.Errorf("data: cannot undo %v on %s to raw values; normalize before other preprocessing", d.Preprocessing, d.Name)
		}
		for _, s := range d.splits() {
			for i := range s.X {
				s.X[i] *= 255
			}
		}
		d.Preprocessing = nil
		return nil
	}
	return fmt.Errorf("data: normalization %q: want unit, standard or none", mode)
}

// Head returns a split holding the first n examples of s (all of them if n ≤ 0 or n ≥ s.N),
// sharing s's storage.
func (s *Split) Head(n int) *Split {
	if s == nil || n <= 0 || n >= s.N {
		return s
	}
	h := &Split{X: s.X[: n*s.D : n*s.D], N: n, D: s.D}
	if s.Y != nil {
		h.Y = s.Y[:n:n]
	}
	return h
}
