package train

import (
	"github.com/dptrain/dptrain/accounting"
)

// StepInfo is what a hook sees after every step: the step's metrics and what it released.
type StepInfo struct {
	Step         int     // steps completed, counted from 1
	TotalSteps   int     // planned steps
	Epoch        float64 // Step × q: passes over the data in expectation
	BatchSize    int     // examples in this step's batch
	Loss         float64 // mean training loss on the batch
	Accuracy     float64 // training accuracy on the batch
	LearningRate float64
	ElapsedSec   float64
	// NonFinite counts the batch's examples whose contribution was not finite and was clipped
	// to zero (operator-only: it depends on private data and is not covered by the records).
	NonFinite int
	// Records are the accounting records the step emitted (empty for a non-private step).
	Records []accounting.Step
	// Privacy holds ε per live accountant after this step, in the configured order.
	Privacy []ModeEpsilon
	// Test holds the evaluation, when one ran after this step.
	Test *Evaluation
}

// ModeEpsilon is one accountant's guarantee, or the reason it has none.
type ModeEpsilon struct {
	Mode    string           `json:"mode"`
	Label   accounting.Label `json:"label,omitempty"`
	Epsilon float64          `json:"epsilon"`
	Delta   float64          `json:"delta"`
	Order   float64          `json:"order,omitempty"`
	Error   string           `json:"error,omitempty"`
}

// Evaluation is loss and accuracy on the test set.
type Evaluation struct {
	Loss     float64 `json:"loss"`
	Accuracy float64 `json:"accuracy"`
	N        int     `json:"n"`
}

// Hook is called after every step, in order. An error stops training; the trainer keeps the
// last good checkpoint.
type Hook interface {
	AfterStep(info *StepInfo) error
}

// HookFunc adapts a function to a Hook.
type HookFunc func(info *StepInfo) error

// AfterStep calls f.
func (f HookFunc) AfterStep(info *StepInfo) error { return f(info) }
