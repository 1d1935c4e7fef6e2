package builtin

import (
	"github.com/dptrain/dptrain/algorithm"
	"github.com/dptrain/dptrain/algorithm/dpmbcd"
	"github.com/dptrain/dptrain/algorithm/dpsgd"
	"github.com/dptrain/dptrain/algorithm/dpsgld"
	"github.com/dptrain/dptrain/algorithm/dpulr"
	"github.com/dptrain/dptrain/algorithm/modelmix"
)

// Registry returns a new registry holding every algorithm dptrain ships, one line each.
func Registry() *algorithm.Algorithms {
	return algorithm.NewAlgorithms(
		dpsgd.Algorithm(),
		dpsgd.Baseline(),
		dpsgld.Algorithm(),
		modelmix.Algorithm(),
		dpulr.Algorithm(),
		dpmbcd.Algorithm(),
		dpmbcd.Baseline(),
	)
}
