// Package models defines the networks dptrain trains — logistic regression, MLPs, CNNs, the
// lifted MLP of DP-MBCD and NMF — as gorgonia graphs on CPU tensors, and computes what private
// optimizers need from them: per-sample gradient norms and clipped gradient sums, computed
// without materialising per-sample gradients where that is cheaper (ghost clipping).
//
// It never draws noise and never decides anything about privacy.
package models
