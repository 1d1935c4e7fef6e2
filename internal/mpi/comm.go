package mpi

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"os"
	"strconv"
	"unsafe"

	"github.com/dptrain/dptrain/comm"
)

// Float is the element type the reductions handle.
type Float interface{ float32 | float64 }

// AllreduceSum replaces v, on every rank, by the sum over ranks of every rank's v. The sum of
// each element is taken in rank order (0, 1, …, Size−1) in float64 and rounded once, whatever
// the transport, so that every rank gets the same bits and a run repeats exactly for a given
// number of ranks. It costs two exchanges of about len(v) elements per rank: the vector is
// cut into Size slices, rank r sums slice r (Alltoall), and the sums are gathered
// (Allgather).
func AllreduceSum[T Float](c comm.Comm, v []T) error {
	k := c.Size()
	if k == 1 || len(v) == 0 {
		return nil
	}
	chunk := (len(v) + k - 1) / k
	padded := make([]T, k*chunk)
	copy(padded, v)
	recv := make([]T, k*chunk)
	n := len(bytesOf(padded)) / k
	if err := c.Alltoall(bytesOf(padded), bytesOf(recv), n); err != nil {
		return fmt.Errorf("mpi: all-reduce (exchange): %w", err)
	}
	mine := make([]T, chunk)
	for i := range mine {
		var s float64
		for j := range k {
			s += float64(recv[j*chunk+i])
		}
		mine[i] = T(s)
	}
	out := padded
	if err := c.Allgather(bytesOf(mine), bytesOf(out)); err != nil {
		return fmt.Errorf("mpi: all-reduce (gather): %w", err)
	}
	copy(v, out[:len(v)])
	return nil
}

// bytesOf is v's memory as bytes: the ranks of one job share one machine architecture, so
// values travel in their native layout.
func bytesOf[T Float](v []T) []byte {
	if len(v) == 0 {
		return nil
	}
	return unsafe.Slice((*byte)(unsafe.Pointer(&v[0])), len(v)*int(unsafe.Sizeof(v[0])))
}

// BcastBytes returns root's b on every rank (b is ignored elsewhere): its length first, then
// the bytes.
func BcastBytes(c comm.Comm, b []byte, root int) ([]byte, error) {
	if c.Size() == 1 {
		return b, nil
	}
	var n [8]byte
	if c.Rank() == root {
		binary.LittleEndian.PutUint64(n[:], uint64(len(b)))
	}
	if err := c.Bcast(n[:], root); err != nil {
		return nil, fmt.Errorf("mpi: broadcast: %w", err)
	}
	l := binary.LittleEndian.Uint64(n[:])
	if l > math.MaxInt32 {
		return nil, fmt.Errorf("mpi: broadcast of %d bytes is too large", l)
	}
	buf := make([]byte, l)
	if c.Rank() == root {
		copy(buf, b)
	}
	if l > 0 {
		if err := c.Bcast(buf, root); err != nil {
			return nil, fmt.Errorf("mpi: broadcast: %w", err)
		}
	}
	return buf, nil
}

// single is the group of one process.
type single struct{}

func (single) Rank() int { return 0 }
func (single) Size() int { return 1 }
func (single) Alltoall(send, recv []byte, n int) error {
	copy(recv[:n], send[:n])
	return nil
}
func (single) Allgather(send, recv []byte) error {
	copy(recv, send)
	return nil
}
func (single) Bcast([]byte, int) error { return nil }
func (single) Close() error            { return nil }

// Single returns the group of this process alone.
func Single() comm.Comm { return single{} }

// ErrNoMPI is returned by World when the process is one rank of a larger job and this
// dptrain was built without MPI.
var ErrNoMPI = errors.New("mpi: this process is one rank of a parallel job (mpirun or srun started several), but this dptrain was built without MPI: install Debian's openmpi-bin and libopenmpi-dev and run make build again (it adds the mpi build tag when they are there), or run a single process")

// launchedSize is the job size the launcher announced in the environment (OpenMPI's mpirun,
// PMIx, PMI, Slurm's srun), or 1.
func launchedSize() int {
	for _, k := range []string{"OMPI_COMM_WORLD_SIZE", "PMIX_SIZE", "PMI_SIZE", "SLURM_NTASKS"} {
		if k == "SLURM_NTASKS" && os.Getenv("SLURM_STEP_ID") == "" {
			continue // an sbatch script, not a task that srun started
		}
		if n, err := strconv.Atoi(os.Getenv(k)); err == nil && n > 1 {
			return n
		}
	}
	return 1
}
