// Package comm defines Comm, the group of processes that train one model together: every rank
// holds the whole model, computes the gradient sums of its share of each batch, and the ranks
// exchange them through Comm's collectives. train.Options.Comm takes one; the command joins an
// MPI job (OpenMPI's mpirun or Slurm's srun) through dptrain's own transport, and a program
// may bring its own.
package comm
