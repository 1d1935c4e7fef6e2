package optim

import "github.com/dptrain/dptrain/models"

// Batch is the models package's mini-batch: N examples, X row-major, Y the class labels.
type Batch = models.Batch

// Stats are the models package's batch statistics (summed loss, correct predictions, examples,
// clipped per-sample gradients).
type Stats = models.Stats
