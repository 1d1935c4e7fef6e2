package mpi

import (
	"errors"
	"sync"

	"github.com/dptrain/dptrain/comm"
)

// Local returns k ranks of one group inside this process, each to be driven by its own
// goroutine: the in-memory transport the tests use for the collectives, the sharded oracle
// and the neighbouring-dataset harness. A rank that calls Close makes every later collective
// of the others fail instead of waiting for it.
func Local(k int) []comm.Comm {
	g := &localGroup{k: k, slots: make([][]byte, k)}
	g.cond = sync.NewCond(&g.mu)
	cs := make([]comm.Comm, k)
	for r := range k {
		cs[r] = &localComm{g: g, rank: r}
	}
	return cs
}

type localGroup struct {
	k     int
	mu    sync.Mutex
	cond  *sync.Cond
	slots [][]byte
	// arrived counts the ranks at the current barrier; phase advances when all are there.
	arrived, phase int
	closed         bool
}

// barrier waits until every rank has called it (or a rank has closed the group).
func (g *localGroup) barrier() error {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.closed {
		return errors.New("mpi: a rank has left the group")
	}
	p := g.phase
	g.arrived++
	if g.arrived == g.k {
		g.arrived = 0
		g.phase++
		g.cond.Broadcast()
		return nil
	}
	for g.phase == p && !g.closed {
		g.cond.Wait()
	}
	if g.phase == p {
		return errors.New("mpi: a rank has left the group")
	}
	return nil
}

type localComm struct {
	g    *localGroup
	rank int
}

func (c *localComm) Rank() int { return c.rank }
func (c *localComm) Size() int { return c.g.k }

// exchange publishes send, waits for every rank's, lets read copy what it needs, and waits
// until every rank has read before the slots may be reused.
func (c *localComm) exchange(send []byte, read func(slots [][]byte)) error {
	c.g.mu.Lock()
	c.g.slots[c.rank] = send
	c.g.mu.Unlock()
	if err := c.g.barrier(); err != nil {
		return err
	}
	c.g.mu.Lock()
	slots := append([][]byte(nil), c.g.slots...)
	c.g.mu.Unlock()
	read(slots)
	return c.g.barrier()
}

func (c *localComm) Alltoall(send, recv []byte, n int) error {
	return c.exchange(send, func(slots [][]byte) {
		for j, s := range slots {
			copy(recv[j*n:(j+1)*n], s[c.rank*n:(c.rank+1)*n])
		}
	})
}

func (c *localComm) Allgather(send, recv []byte) error {
	n := len(send)
	return c.exchange(send, func(slots [][]byte) {
		for j, s := range slots {
			copy(recv[j*n:(j+1)*n], s)
		}
	})
}

func (c *localComm) Bcast(buf []byte, root int) error {
	return c.exchange(buf, func(slots [][]byte) {
		if c.rank != root {
			copy(buf, slots[root])
		}
	})
}

func (c *localComm) Close() error {
	c.g.mu.Lock()
	c.g.closed = true
	c.g.cond.Broadcast()
	c.g.mu.Unlock()
	return nil
}
