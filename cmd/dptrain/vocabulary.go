package main

import "github.com/dptrain/dptrain/train"

// flagTerms translates the accounting package's declaration fields into the flags of dptrain
// account compare that set them (see train.InUserTerms).
var flagTerms = map[string]string{
	"LastIterateOnly": "--last-iterate-only",
	"UpdateRule":      "--update-rule",
	"Sensitivity":     "--clip-norm",
	"StepSize":        "--step-size",
	"DatasetSize":     "--dataset-size",
	"Lipschitz":       "--lipschitz",
	"Smoothness":      "--smoothness",
	"HolderExponent":  "--holder-exponent",
	"StrongConvexity": "--strong-convexity",
	"DomainDiameter":  "--diameter",
	"Convexity":       "--convexity",
	"Block":           "--block",
	"BatchIndex":      "--blocks",
	"Sampling":        "--sampling",
	"MinBatchSize":    "--min-batch-size",
	"BatchSize":       "--batch-size",
	"Accountants":     "--accountant",
}

// inFlags rewrites an accounting message in terms of flags.
func inFlags(msg string) string { return train.InUserTerms(msg, flagTerms) }
