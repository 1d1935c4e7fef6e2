package audit

import (
	"fmt"

	audit "github.com/dptrain/dptrain/accounting/audit"
)

// Threat is what the auditor sees.
type Threat string

const (
	// AllIterates: every released iterate (white-box), what composition accountants cover.
	AllIterates Threat = "all-iterates"
	// FinalModel: only the final model (black-box), what hidden-state accountants cover.
	FinalModel Threat = "final-model"
)

// Options configure an audit.
type Options struct {
	// Canaries is m, the number of canaries, each included with probability 1/2.
	Canaries int
	// Threat selects the canaries and the score; empty: all-iterates when the config releases
	// all iterates (privacy.release), final-model otherwise.
	Threat Threat
	// Support is the number of coordinates of a gradient canary (0: 1, a Dirac canary). A run
	// that also clips in l∞ with p parts (ModelMix's Algorithm 2, declared as LinfParts in its
	// records) needs Support ≥ p, or its truncation would shrink the canary below C.
	Support int
	// Confidence of the lower bound; 0 means 0.95.
	Confidence float64
	// Counts are the (k₊, k₋) guess counts tried, fixed before training; nil means
	// audit.DefaultCounts(Canaries). The confidence is split over them.
	Counts []audit.Guesses
}

func (o *Options) resolve(release string) error {
	if o.Canaries < 2 {
		return fmt.Errorf("audit: %d canaries: use --canaries m with m ≥ 2 (hundreds to thousands give power)", o.Canaries)
	}
	if o.Confidence == 0 {
		o.Confidence = 0.95
	}
	if !(o.Confidence > 0 && o.Confidence < 1) {
		return fmt.Errorf("audit: confidence %v must lie in (0, 1)", o.Confidence)
	}
	switch o.Threat {
	case "":
		o.Threat = FinalModel
		if release == "all-iterates" {
			o.Threat = AllIterates
		}
	case AllIterates, FinalModel:
	default:
		return fmt.Errorf("audit: --threat %q: want all-iterates or final-model", o.Threat)
	}
	if o.Counts == nil {
		o.Counts = audit.DefaultCounts(o.Canaries)
	}
	for _, c := range o.Counts {
		if c.Plus < 0 || c.Minus < 0 || c.Made() == 0 || c.Made() > o.Canaries {
			return fmt.Errorf("audit: %d guesses included and %d excluded about %d canaries: want k₊, k₋ ≥ 0 and 0 < k₊ + k₋ ≤ m (lower --guesses)", c.Plus, c.Minus, o.Canaries)
		}
	}
	return nil
}
