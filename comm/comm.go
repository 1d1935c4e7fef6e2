package comm

// Comm is a group of Size processes, each knowing its Rank in [0, Size). Every collective
// must be called by every rank, in the same order, with buffers of the same lengths.
type Comm interface {
	Rank() int
	Size() int
	// Alltoall sends chunk j of send (n bytes at j·n) to rank j and receives into chunk j of
	// recv what rank j sent this rank. send and recv hold Size()·n bytes.
	Alltoall(send, recv []byte, n int) error
	// Allgather receives into chunk j of recv (len(send) bytes at j·len(send)) rank j's send.
	Allgather(send, recv []byte) error
	// Bcast copies root's buf into every rank's buf (of the same length).
	Bcast(buf []byte, root int) error
	// Close leaves the group (MPI_Finalize); no collective may follow.
	Close() error
}
