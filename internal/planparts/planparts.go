// Package planparts gives the YAML trainer (package train) the pieces of a dptrain.Plan that
// its checkpoints restore in place (the sampler's position, the optimizer's state, the seeded
// streams' positions) and that its reports read (the live accountants), without making them
// part of the public API, where a caller could draw batches or take steps around the session.
package planparts

import (
	"github.com/dptrain/dptrain/accounting"
	"github.com/dptrain/dptrain/data"
	"github.com/dptrain/dptrain/optim"
)

// Pieces are a plan's pieces.
type Pieces struct {
	Sampler             *data.Sampler
	Optimizer           optim.Optimizer
	Noise, SamplerNoise *optim.Noise
	Live                *accounting.Live
}

// Of returns the pieces of a *dptrain.Plan; package dptrain sets it.
var Of func(plan any) Pieces
