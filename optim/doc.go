// Package optim implements one step of each private training algorithm — DP-SGD, DP-SGLD,
// DP-MBCD, ModelMix and DP-ULR — and the base update rules applied to a privatised gradient as
// post-processing (SGD, momentum, Adam), clipping and secure noise.
//
// Every step returns the accounting.Step records of what it released; optim keeps no privacy
// ledger itself.
package optim
