package comm_test

import (
	"fmt"

	"github.com/dptrain/dptrain/comm"
)

// alone is the group of one process: every collective is a copy. A program that runs its
// ranks on its own transport implements Comm the same way, with real exchanges, and passes it
// to train.Options.Comm.
type alone struct{}

func (alone) Rank() int { return 0 }
func (alone) Size() int { return 1 }
func (alone) Alltoall(send, recv []byte, n int) error {
	copy(recv[:n], send[:n])
	return nil
}
func (alone) Allgather(send, recv []byte) error {
	copy(recv, send)
	return nil
}
func (alone) Bcast([]byte, int) error { return nil }
func (alone) Close() error            { return nil }

func Example() {
	var c comm.Comm = alone{}
	send, recv := []byte("grad"), make([]byte, 4)
	if err := c.Allgather(send, recv); err != nil {
		panic(err)
	}
	fmt.Printf("rank %d of %d gathered %q\n", c.Rank(), c.Size(), recv)
	// Output:
	// rank 0 of 1 gathered "grad"
}
