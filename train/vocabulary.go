package train

import (
	"regexp"
	"strings"
)

// The accounting package names what a theorem needs by its declaration fields (Run.Lipschitz,
// Step.Sensitivity): front-ends translate those names into what their users write. ConfigTerms
// is the translation into config keys; dptrain's command line has its own into flags.

// ConfigTerms maps declaration fields to the config keys that set them. Fields dptrain
// declares itself from the run (the loss constants of DP-SGLD, the dataset size) map to a
// plain description.
var ConfigTerms = map[string]string{
	"LastIterateOnly": "privacy.release: final",
	"UpdateRule":      "optimizer.update",
	"Sensitivity":     "optimizer.clip_norm",
	"StepSize":        "optimizer.learning_rate",
	"DatasetSize":     "the number of training examples",
	"Lipschitz":       "the loss's Lipschitz constant",
	"Smoothness":      "the loss's smoothness",
	"StrongConvexity": "optimizer.dp_sgld.regularization",
	"DomainDiameter":  "optimizer.dp_sgld.radius",
	"Convexity":       "the loss's convexity",
	"Sampling":        "optimizer.sampling",
	"MinBatchSize":    "optimizer.min_batch_size",
	"BatchSize":       "optimizer.batch_size",
	"Accountants":     "privacy.accountants",
}

var declarationField = regexp.MustCompile(`\b(?:Run|Step)\.([A-Z][A-Za-z]*)`)

// InUserTerms rewrites the declaration fields named in msg with terms (e.g. ConfigTerms); the
// phrase "set last_iterate_only" becomes "set" followed by the term for LastIterateOnly.
func InUserTerms(msg string, terms map[string]string) string {
	if t, ok := terms["LastIterateOnly"]; ok {
		msg = strings.ReplaceAll(msg, "set last_iterate_only (Run.LastIterateOnly)", "set "+t)
	}
	return declarationField.ReplaceAllStringFunc(msg, func(m string) string {
		if t, ok := terms[declarationField.FindStringSubmatch(m)[1]]; ok {
			return t
		}
		return m
	})
}
