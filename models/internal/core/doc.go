// Package core is what package models and its graph engine (package models/graph) share: a
// network laid out as the graph builds it (Net, Op, Layer), and the arithmetic that both
// engines must compute the same way, bit for bit: weight standardisation (ws.go), the loss
// head's log-sum-exp and scoring, GroupNorm's ε, max pooling's ordered keys, transposes.
package core
