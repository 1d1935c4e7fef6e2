package main

// fieldFlags names the declaration fields that an accountant's refusal names
// (accounting.RequirementError) by the flags of dptrain account that set them.
var fieldFlags = map[string]string{
	"Run.LastIterateOnly": "--last-iterate-only",
	"Run.UpdateRule":      "--update-rule",
	"Step.Sensitivity":    "--clip-norm",
	"Step.StepSize":       "--step-size",
	"Run.DatasetSize":     "--dataset-size",
	"Run.Lipschitz":       "--lipschitz",
	"Run.Smoothness":      "--smoothness",
	"Run.HolderExponent":  "--holder-exponent",
	"Run.StrongConvexity": "--strong-convexity",
	"Run.DomainDiameter":  "--diameter",
	"Run.Convexity":       "--convexity",
	"Step.Block":          "--block",
	"Step.BatchIndex":     "--blocks",
	"Step.Sampling":       "--sampling",
	"Step.MinBatchSize":   "--min-batch-size",
	"Step.BatchSize":      "--batch-size",
	"Run.Accountants":     "--accountant",
}

// flagOf names a declaration field by its flag ("" when no flag sets it).
func flagOf(field string) string { return fieldFlags[field] }

// accountFlags are the fields dptrain account itself has flags for; the others are set by
// dptrain account compare's flags.
var accountFlags = map[string]bool{"Step.Sampling": true, "Step.MinBatchSize": true, "Step.BatchSize": true,
	"Run.DatasetSize": true, "Run.Accountants": true}

// accountFlagOf names a field for dptrain account: by its flag, or by dptrain account
// compare's flag where account has none.
func accountFlagOf(field string) string {
	f := fieldFlags[field]
	if f == "" || accountFlags[field] {
		return f
	}
	return f + " (with dptrain account compare)"
}
