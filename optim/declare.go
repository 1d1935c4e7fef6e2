package optim

import (
	"github.com/dptrain/dptrain/accounting"
	"github.com/dptrain/dptrain/data"
)

// Declarer is implemented by every built-in algorithm's optimizer: Declare returns the records the
// next call to Step will release for a batch drawn as info says, without touching data or
// randomness. The trainer asks the live accountant whether those records would overshoot the
// privacy target before it runs the step (the privacy contract of package accounting: stop before the step).
type Declarer interface {
	Declare(info data.BatchInfo) ([]accounting.Step, error)
}

// StepDeclarer is a Declarer that can also declare the records of any planned step k (counted
// from 0) without having taken the steps before it: what calibration replays for every step of
// a run, so that records depending on the step size, the block or the batch index are
// calibrated as they will be released. Declare(info) equals DeclareStep(Steps(), info).
type StepDeclarer interface {
	Declarer
	DeclareStep(k int, info data.BatchInfo) ([]accounting.Step, error)
}

// DeclaredBatch is a stand-in batch of the size info declares, for PlanBatch's public checks
// when a step is declared before its batch is drawn.
func DeclaredBatch(bi data.BatchInfo) data.Batch {
	info := declOf(bi)
	switch info.Sampling {
	case accounting.FullBatch:
		return data.Batch{N: info.DatasetSize}
	case accounting.Poisson:
		return data.Batch{}
	case accounting.PoissonWithRejection:
		return data.Batch{N: info.MinBatchSize}
	}
	return data.Batch{N: info.BatchSize}
}
