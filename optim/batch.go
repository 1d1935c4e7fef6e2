package optim

import "github.com/dptrain/dptrain/data"

// Batch is the mini-batch the models and optimizers share (data.Batch): N examples, X row-major,
// Y the class labels.
type Batch = data.Batch

// Stats are the batch statistics the models and optimizers share (data.Stats): summed loss,
// correct predictions, examples, clipped per-sample gradients.
type Stats = data.Stats
