// Package ledger keeps the privacy ledger: an append-only file with one line per private step
// ever executed on a dataset, holding the records the step released (accounting.Step), so that
// ε can be computed, at any time and after any restart, for every step that touched the data.
//
// The ledger is tamper-evident. Each line carries the SHA-256 of the line before it; a
// checkpoint records the ledger's length and last hash (an Anchor). Open verifies the chain line
// by line and against every anchor it is given: a line deleted, edited, moved or inserted, or a
// ledger cut short, is a *Error naming the damage, and no ε is computed from it. A checkpoint
// older than the ledger's end continues on a new branch; the steps of the branch it abandoned
// stay in the ledger and are counted.
//
// A Store is a directory holding one ledger, locked by the process that uses it: the ledger a
// library session keeps across processes (dptrain.Privacy.Ledger). The trainer keeps its run's
// ledger in the run's private directory, under the run directory's own lock.
package ledger
