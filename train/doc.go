// Package train runs private training: the configuration schema and its validation, the loop
// and its per-step hooks (live privacy accounting, metrics, progress, logging), evaluation and
// atomic checkpoints. It holds no algorithm mathematics: that lives in optim and accounting.
package train
