//go:build mpi

package mpi

/*
#cgo pkg-config: ompi
#include <mpi.h>
#include <stdlib.h>

static int dp_init(int *provided) {
	int rc = MPI_Init_thread(NULL, NULL, MPI_THREAD_SERIALIZED, provided);
	if (rc != MPI_SUCCESS) return rc;
	// Errors come back as codes (reported with their text), instead of aborting the job
	// from inside the library.
	return MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
}
static int dp_serialized(void) { return MPI_THREAD_SERIALIZED; }
static int dp_rank(int *r) { return MPI_Comm_rank(MPI_COMM_WORLD, r); }
static int dp_size(int *n) { return MPI_Comm_size(MPI_COMM_WORLD, n); }
static int dp_alltoall(void *send, void *recv, int n) {
	return MPI_Alltoall(send, n, MPI_BYTE, recv, n, MPI_BYTE, MPI_COMM_WORLD);
}
static int dp_allgather(void *send, void *recv, int n) {
	return MPI_Allgather(send, n, MPI_BYTE, recv, n, MPI_BYTE, MPI_COMM_WORLD);
}
static int dp_bcast(void *buf, int n, int root) {
	return MPI_Bcast(buf, n, MPI_BYTE, root, MPI_COMM_WORLD);
}
static int dp_finalize(void) { return MPI_Finalize(); }
static void dp_error_string(int code, char *buf) {
	int n = 0;
	MPI_Error_string(code, buf, &n);
	buf[n] = 0;
}
*/
import "C"

import (
	"errors"
	"fmt"
	"math"
	"sync"
	"unsafe"

	"github.com/dptrain/dptrain/comm"
)

// Built reports whether this build can join an MPI job.
const Built = true

// world is MPI_COMM_WORLD; MPI can be initialised once per process.
type world struct {
	rank, size int
	mu         sync.Mutex
	closed     bool
}

var (
	worldOnce sync.Once
	worldComm *world
	worldErr  error
)

// World initialises MPI (once per process; later calls return the same group) and returns
// MPI_COMM_WORLD. A process that no launcher started as one of several ranks (mpirun -np 1,
// or no mpirun) is a group of one, and MPI is not initialised at all.
func World() (comm.Comm, error) {
	if launchedSize() <= 1 {
		return Single(), nil
	}
	worldOnce.Do(func() {
		var provided C.int
		if rc := C.dp_init(&provided); rc != C.MPI_SUCCESS {
			worldErr = fmt.Errorf("mpi: MPI_Init_thread: %s", errorString(rc))
			return
		}
		if provided < C.dp_serialized() {
			worldErr = errors.New("mpi: this MPI library cannot be called from several threads one at a time (MPI_THREAD_SERIALIZED), which Go's scheduler needs: use OpenMPI from Debian's openmpi-bin")
			return
		}
		var r, n C.int
		if rc := C.dp_rank(&r); rc != C.MPI_SUCCESS {
			worldErr = fmt.Errorf("mpi: MPI_Comm_rank: %s", errorString(rc))
			return
		}
		if rc := C.dp_size(&n); rc != C.MPI_SUCCESS {
			worldErr = fmt.Errorf("mpi: MPI_Comm_size: %s", errorString(rc))
			return
		}
		worldComm = &world{rank: int(r), size: int(n)}
	})
	if worldErr != nil {
		return nil, worldErr
	}
	return worldComm, nil
}

func errorString(code C.int) string {
	buf := (*C.char)(C.malloc(C.MPI_MAX_ERROR_STRING + 1))
	defer C.free(unsafe.Pointer(buf))
	C.dp_error_string(code, buf)
	return C.GoString(buf)
}

func (w *world) Rank() int { return w.rank }
func (w *world) Size() int { return w.size }

// call runs one MPI call at a time (MPI_THREAD_SERIALIZED) on a group that is still open.
func (w *world) call(name string, f func() C.int) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.closed {
		return fmt.Errorf("mpi: %s after Close", name)
	}
	if rc := f(); rc != C.MPI_SUCCESS {
		return fmt.Errorf("mpi: %s: %s", name, errorString(rc))
	}
	return nil
}

// count checks that n bytes fit MPI's int count.
func count(n int) (C.int, error) {
	if n < 0 || n > math.MaxInt32 {
		return 0, fmt.Errorf("mpi: a message of %d bytes does not fit one MPI call", n)
	}
	return C.int(n), nil
}

// ptr returns a C pointer to b's memory (nil for an empty b). cgo pins it for the call.
func ptr(b []byte) unsafe.Pointer {
	if len(b) == 0 {
		return nil
	}
	return unsafe.Pointer(&b[0])
}

func (w *world) Alltoall(send, recv []byte, n int) error {
	c, err := count(n)
	if err != nil {
		return err
	}
	if len(send) < w.size*n || len(recv) < w.size*n {
		return fmt.Errorf("mpi: Alltoall buffers of %d and %d bytes, need %d", len(send), len(recv), w.size*n)
	}
	return w.call("MPI_Alltoall", func() C.int { return C.dp_alltoall(ptr(send), ptr(recv), c) })
}

func (w *world) Allgather(send, recv []byte) error {
	c, err := count(len(send))
	if err != nil {
		return err
	}
	if len(recv) < w.size*len(send) {
		return fmt.Errorf("mpi: Allgather receive buffer of %d bytes, need %d", len(recv), w.size*len(send))
	}
	return w.call("MPI_Allgather", func() C.int { return C.dp_allgather(ptr(send), ptr(recv), c) })
}

func (w *world) Bcast(buf []byte, root int) error {
	c, err := count(len(buf))
	if err != nil {
		return err
	}
	return w.call("MPI_Bcast", func() C.int { return C.dp_bcast(ptr(buf), c, C.int(root)) })
}

// Close calls MPI_Finalize. A process cannot rejoin MPI afterwards.
func (w *world) Close() error {
	err := w.call("MPI_Finalize", func() C.int { return C.dp_finalize() })
	w.mu.Lock()
	w.closed = true
	w.mu.Unlock()
	return err
}
