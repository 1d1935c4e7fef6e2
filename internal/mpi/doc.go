// Package mpi is dptrain's data-parallel transport: it connects the processes of one training
// run as a comm.Comm, and the collectives built on it (AllreduceSum, Bcast) reduce in a fixed
// order, so that every rank ends a step with bit-identical values and a seeded run is
// reproducible for a given number of ranks.
//
// Built with the mpi build tag (`make build-mpi`), World joins the job OpenMPI's mpirun (or
// Slurm's srun) started, through a small cgo wrapper of Debian's libopenmpi-dev. Without the
// tag, World is a single process, and refuses to run as one rank of a larger job, naming the
// build that can. Local connects ranks inside one process, for tests.
package mpi
