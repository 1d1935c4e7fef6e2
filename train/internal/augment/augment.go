package augment

import (
	"fmt"
	"math/rand/v2"
)

// MaxMultiplicity is the largest K accepted: each step costs about K times an un-augmented
// one (De et al. use K = 16 for CIFAR-10, Section 3.1).
const MaxMultiplicity = 64

// MaxViews is the largest number of precomputed views of an example (Config.Views): each is a
// copy of the training set's features.
const MaxViews = 50

// Config is an augmentation: K copies of every example, each a random crop of the image padded
// with CropPadding zeros on every side and, with Flip, mirrored left to right with probability
// 1/2. Examples are images of Shape C×H×W, stored row-major (channel, row, column).
type Config struct {
	// Multiplicity is K, the number of augmented copies whose gradients are averaged before
	// clipping; 0 means 1.
	Multiplicity int
	// CropPadding is the padding p of the random crops: each copy is the H×W window at a
	// uniform offset (dy, dx) ∈ {0..2p}² of the image padded with p zeros on every side.
	// 0: no crops.
	CropPadding int
	// Flip mirrors each copy horizontally with probability 1/2.
	Flip bool
	// Shape is C, H, W: of the images, or with Views of one view.
	Shape [3]int
	// Views, when > 0, says that every example is a row of Views precomputed views of Shape
	// each (view 0 the example itself, the others its transforms in ViewTransforms' order,
	// mapped by a fixed feature extractor): copy k is one of those views instead of a transform
	// drawn at random, the K copies distinct while K ≤ Views. CropPadding and Flip then
	// describe how the views were made and are not applied again.
	Views int
}

// K returns the number of copies per example (Multiplicity, at least 1).
func (c Config) K() int { return max(c.Multiplicity, 1) }

// Transforms reports whether copies differ from the example (crops, flips, or other views).
func (c Config) Transforms() bool { return c.CropPadding > 0 || c.Flip || c.Views > 1 }

// Dim returns the number of values of one copy (C·H·W).
func (c Config) Dim() int { return c.Shape[0] * c.Shape[1] * c.Shape[2] }

// Row returns the number of values of one example: Views·Dim with views, else Dim.
func (c Config) Row() int { return max(c.Views, 1) * c.Dim() }

// ViewTransforms returns every transform that CropPadding and Flip can draw, the identity
// first, then the crop offsets (DY, DX) in row-major order, each unflipped then (with Flip)
// flipped:
// (2p+1)² transforms, twice that with Flip. A feature extractor too slow to run on every step
// (a scattering transform) runs once on each of them, and the rows of those views are what a
// Config with Views draws from.
func (c Config) ViewTransforms() []Transform {
	p := c.CropPadding
	flips := []bool{false}
	if c.Flip {
		flips = append(flips, true)
	}
	out := []Transform{{DY: p, DX: p}}
	for dy := range 2*p + 1 {
		for dx := range 2*p + 1 {
			for _, f := range flips {
				if t := (Transform{DY: dy, DX: dx, Flip: f}); t != out[0] {
					out = append(out, t)
				}
			}
		}
	}
	return out
}

// Check returns what is wrong with c, naming the keys of a dptrain config (data.augment.*).
func (c Config) Check() error {
	ch, h, w := c.Shape[0], c.Shape[1], c.Shape[2]
	if c.Views != 0 {
		switch {
		case ch <= 0 || h <= 0 || w <= 0:
			return fmt.Errorf("data.augment: the views must have a shape C×H×W, got %v", c.Shape)
		case c.Views < 2 || c.Views > MaxViews:
			return fmt.Errorf("data.augment: %d views of every example: want 2 to %d (a crop padding of 1 with flips gives 18)", c.Views, MaxViews)
		case c.Multiplicity < 0 || c.Multiplicity > MaxMultiplicity:
			return fmt.Errorf("data.augment.multiplicity = %d: want 1 to %d (0 or 1: one copy per example)", c.Multiplicity, MaxMultiplicity)
		}
		return nil
	}
	switch {
	case ch <= 0 || h <= 0 || w <= 0:
		return fmt.Errorf("data.augment: the examples must be images C×H×W, got shape %v: remove data.augment for this dataset", c.Shape)
	case c.Multiplicity < 0 || c.Multiplicity > MaxMultiplicity:
		return fmt.Errorf("data.augment.multiplicity = %d: want 1 to %d (0 or 1: one copy per example)", c.Multiplicity, MaxMultiplicity)
	case c.CropPadding < 0 || 2*c.CropPadding > min(h, w):
		return fmt.Errorf("data.augment.crop_padding = %d: want 0 to %d (half the smaller side of the %d×%d images; 4 is usual for 28×28 and 32×32)", c.CropPadding, min(h, w)/2, h, w)
	case c.K() > 1 && !c.Transforms():
		return fmt.Errorf("data.augment.multiplicity = %d with neither crop_padding nor flip: the copies would be identical; set crop_padding (e.g. 4) or flip: true, or multiplicity: 1", c.Multiplicity)
	}
	return nil
}

// Transform is one augmentation of one image: the crop offset (DY, DX) ∈ {0..2p}² in the padded
// image and whether to mirror it.
type Transform struct {
	DY, DX int
	Flip   bool
}

// Draw draws one copy's transform from r: DY then DX uniform on {0..2p} when p > 0 (else p, the
// identity crop), then one bit for the flip when Flip is set.
func (c Config) Draw(r *rand.Rand) Transform {
	p := c.CropPadding
	t := Transform{DY: p, DX: p}
	if p > 0 {
		t.DY, t.DX = r.IntN(2*p+1), r.IntN(2*p+1)
	}
	if c.Flip {
		t.Flip = r.Uint64()&1 == 1
	}
	return t
}

// Apply writes into dst (C·H·W values) the image src transformed by t:
//
//	dst[c][y][x] = src[c][y + DY − p][x′ + DX − p],  x′ = W−1−x if Flip else x,
//
// and 0 where that falls outside the image (the zero padding). A crop by (p, p) without a flip
// is the identity.
func (c Config) Apply(dst, src []float32, t Transform) {
	ch, h, w, p := c.Shape[0], c.Shape[1], c.Shape[2], c.CropPadding
	for k := range ch {
		in, out := src[k*h*w:(k+1)*h*w], dst[k*h*w:(k+1)*h*w]
		for y := range h {
			row := out[y*w : (y+1)*w]
			sy := y + t.DY - p
			if sy < 0 || sy >= h {
				clear(row)
				continue
			}
			srow := in[sy*w : (sy+1)*w]
			for x := range w {
				xs := x
				if t.Flip {
					xs = w - 1 - x
				}
				xs += t.DX - p
				if xs < 0 || xs >= w {
					row[x] = 0
				} else {
					row[x] = srow[xs]
				}
			}
		}
	}
}
