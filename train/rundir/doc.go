// Package rundir is the layout and the file formats of a run directory (output.dir): the
// public model, summary and config at its top, and under private/ the operator's files
// (checkpoints and their rotation, the privacy ledger, the seed, metrics, timing and the lock
// that keeps a second writer out). Package train writes a run directory through it; the
// command and its sweeps read one through it.
package rundir
