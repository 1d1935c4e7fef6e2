//go:build !mpi

package mpi

import "github.com/dptrain/dptrain/comm"

// Built reports whether this build can join an MPI job.
const Built = false

// World returns the single-process group, or ErrNoMPI when the launcher started several
// processes (a build without MPI cannot join them).
func World() (comm.Comm, error) {
	if launchedSize() > 1 {
		return nil, ErrNoMPI
	}
	return Single(), nil
}
