// Package sweep runs benchmark suites: grids of training runs described by one YAML file.
//
// A suite (benchmarks/suites/*.yaml) names base configs and axes of values; every combination
// is a cell. Plan resolves every cell into a full config in a plan directory; RunCell trains one
// cell (idempotent: a finished cell is skipped, an interrupted one resumes from its checkpoint);
// Local (and RunLocal) runs the cells with a bounded pool of worker processes, each given its
// CPUs through GOMAXPROCS with OpenBLAS on one thread, reports each cell as it ends, and on
// cancellation sends the running cells SIGTERM so that they checkpoint; EmitSlurm writes an
// sbatch job array and a collector job for clusters; Collect gathers every cell's summary into
// results.csv, results.json, results.md and plots.
//
// An algorithm is just a value on an axis: a suite never names code. Every cell's ε covers that
// run alone: choosing the best cell on private data is itself a release (see PrivacyNote).
package sweep
