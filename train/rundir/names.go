package rundir

import "github.com/dptrain/dptrain/ledger"

// Files in a run's output directory: ModelFile, SummaryFile and ConfigFile at the top,
// CheckpointFile (the newest checkpoint) in PrivateDir (see PrivatePath).
const (
	CheckpointFile = "checkpoint.dpt"
	ModelFile      = "model.dpm"
	SummaryFile    = "summary.json"
	ConfigFile     = "config.yaml"
)

// Files an interrupted run writes in its PrivateDir instead of ModelFile and SummaryFile at
// the top (train.Summary.Held).
const (
	InterruptedModelFile   = "model-interrupted.dpm"
	InterruptedSummaryFile = "summary-interrupted.json"
)

// LedgerFile is the run's privacy ledger in its PrivateDir (package ledger): one JSON line per
// private step ever executed on the run's data, on every branch of the run. It only grows. A
// resume from any checkpoint, the newest or an older one (--resume-from), reads it whole,
// verifies it against every checkpoint of the run (each records the ledger's length and head)
// and composes every line into the live accountants, so that ε counts the steps of abandoned
// branches too: privacy spent is never given back, however the run is continued. A damaged
// ledger stops the resume with a *ledger.Error.
const LedgerFile = ledger.FileName
