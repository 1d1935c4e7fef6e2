package train

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/fnv"
	"math"
	"os"
	"strings"
	"unsafe"

	"github.com/dptrain/dptrain/comm"
	"github.com/dptrain/dptrain/train/config"
	"github.com/dptrain/dptrain/train/rundir"

	"github.com/dptrain/dptrain"
	"github.com/dptrain/dptrain/data"
	"github.com/dptrain/dptrain/internal/mpi"
	"github.com/dptrain/dptrain/optim"
)

// Data-parallel training (Options.Comm with several ranks). Every rank holds the whole model and
// the whole training set, and draws the same batches and the same noise from one key that rank
// 0 draws from crypto/rand (or the run's seed) and sends only to the other ranks. Each rank
// clips the per-example gradients of its share of the batch (mpi.Sharded), the shares are
// summed in rank order, and every rank adds the same noise to the same sum: the released
// quantity is the single-process one (same batch, same clipping, noise added once), so the
// accounting is the single-process accounting and the neighbouring-dataset bound holds
// unchanged. Rank 0 alone owns the run directory, the live accountants, the ledger, the
// checkpoints, the metrics and the model; it decides at every step whether the run goes on
// (the privacy target, an interruption) and the other ranks follow.

// The decisions rank 0 broadcasts before every step.
const (
	decideStep byte = iota
	decideStop
)

// dist is a trainer's view of its group; nil for a single process.
type dist struct {
	comm comm.Comm
}

func (d *dist) leader() bool { return d == nil || d.comm.Rank() == 0 }

// newDist returns the group of opts.Comm, nil for a single process; it refuses the
// algorithms the sharded step cannot run (Algorithm.DataParallel).
func newDist(opts Options, algs *config.Algorithms, name string) (*dist, error) {
	if opts.Comm == nil || opts.Comm.Size() == 1 {
		return nil, nil
	}
	a, err := algs.Lookup(name)
	if err != nil {
		return nil, err
	}
	if !a.DataParallel {
		var ok []string
		for _, n := range algs.Names() {
			if b, _ := algs.Lookup(n); b.DataParallel {
				ok = append(ok, n)
			}
		}
		return nil, fmt.Errorf("optimizer.algorithm %s cannot run on %d ranks: data-parallel training splits the gradient sums, and its step reads more of the model; run it as one process (data-parallel: %s)", name, opts.Comm.Size(), strings.Join(ok, ", "))
	}
	return &dist{comm: opts.Comm}, nil
}

// quiet makes a rank other than 0 log warnings and errors only, each naming the rank, and
// draw no progress bar: rank 0 reports for the run.
func (d *dist) quiet(t *Trainer) {
	if d.leader() {
		return
	}
	t.log, t.opts.Progress = rankLogger{l: t.log, rank: d.comm.Rank()}, nil
}

// shareStreams returns the run's streams on every rank: rank 0's seed (the config's, or the
// one read back from the run being resumed) or, for a private run, a key rank 0 draws from
// crypto/rand, sent to the others.
func (d *dist) shareStreams(seed *uint64) (*dptrain.Streams, *uint64, error) {
	msg := make([]byte, 41)
	if d.leader() {
		if seed != nil {
			msg[0] = 1
			binary.LittleEndian.PutUint64(msg[1:], *seed)
		} else {
			key, err := optim.NewNoiseKey()
			if err != nil {
				return nil, nil, err
			}
			copy(msg[9:], key[:])
		}
	}
	if err := d.comm.Bcast(msg, 0); err != nil {
		return nil, nil, fmt.Errorf("sharing the noise key: %w", err)
	}
	if msg[0] == 1 {
		s := binary.LittleEndian.Uint64(msg[1:])
		st, err := dptrain.NewStreams(&s)
		return st, &s, err
	}
	return dptrain.SharedStreams([32]byte(msg[9:])), nil, nil
}

// same checks that every rank holds the same values as rank 0 (the training split, the
// initial parameters), by comparing a hash of them.
func (d *dist) same(what string, x []float32, y []int32) error {
	h := fnv.New64a()
	if len(x) > 0 {
		h.Write(unsafe.Slice((*byte)(unsafe.Pointer(&x[0])), 4*len(x)))
	}
	if len(y) > 0 {
		h.Write(unsafe.Slice((*byte)(unsafe.Pointer(&y[0])), 4*len(y)))
	}
	mine := make([]byte, 8)
	binary.LittleEndian.PutUint64(mine, h.Sum64())
	all := make([]byte, 8*d.comm.Size())
	if err := d.comm.Allgather(mine, all); err != nil {
		return fmt.Errorf("comparing the %s across ranks: %w", what, err)
	}
	for r := 1; r < d.comm.Size(); r++ {
		if string(all[8*r:8*r+8]) != string(all[:8]) {
			return fmt.Errorf("rank %d's %s differ from rank 0's: every rank must read the same files (data.dir) with the same dptrain", r, what)
		}
	}
	return nil
}

// shareSigma returns rank 0's noise multiplier on every rank.
func (d *dist) shareSigma(sigma float64) (float64, error) {
	v := make([]byte, 8)
	binary.LittleEndian.PutUint64(v, math.Float64bits(sigma))
	if err := d.comm.Bcast(v, 0); err != nil {
		return 0, fmt.Errorf("sharing the noise multiplier: %w", err)
	}
	return math.Float64frombits(binary.LittleEndian.Uint64(v)), nil
}

// decide broadcasts rank 0's decision (stop or not) and returns it on every rank.
func (d *dist) decide(stop bool) (bool, error) {
	v := []byte{decideStep}
	if stop {
		v[0] = decideStop
	}
	if err := d.comm.Bcast(v, 0); err != nil {
		return false, fmt.Errorf("rank %d: waiting for rank 0's decision: %w", d.comm.Rank(), err)
	}
	return v[0] == decideStop, nil
}

// shareCheckpoint sends the checkpoint rank 0 resumed from (path; "" for a new run) to the
// other ranks and returns it there (nil for a new run).
func (d *dist) shareCheckpoint(path string) (*rundir.Checkpoint, error) {
	var b []byte
	if d.leader() && path != "" {
		var err error
		if b, err = os.ReadFile(path); err != nil {
			return nil, err
		}
	}
	b, err := mpi.BcastBytes(d.comm, b, 0)
	if err != nil {
		return nil, fmt.Errorf("sending the checkpoint to the other ranks: %w", err)
	}
	if d.leader() || len(b) == 0 {
		return nil, nil
	}
	return rundir.DecodeCheckpoint(b, "rank 0's checkpoint")
}

// oracle wraps the model so that each rank computes its share of every batch.
func (d *dist) oracle(o optim.GradientOracle) optim.GradientOracle {
	if d == nil {
		return o
	}
	return &mpi.Sharded{Inner: o, Comm: d.comm}
}

// follow is Run on a rank other than 0: it takes every step rank 0 takes, on its share of
// each batch, and returns when rank 0 stops or the plan is complete. It writes nothing.
func (t *Trainer) follow(_ context.Context) (*Summary, error) {
	c, err := t.dist.shareCheckpoint("")
	if err != nil {
		return nil, err
	}
	if c != nil {
		if _, err := t.apply(c, "rank 0's checkpoint"); err != nil {
			return nil, err
		}
	}
	var oracle optim.GradientOracle = t.model
	if t.opts.Oracle != nil {
		oracle = t.opts.Oracle(oracle)
	}
	sess, err := t.dp.NewSession(t.dist.oracle(oracle))
	if err != nil {
		return nil, err
	}
	// Signals reach every rank; only rank 0's decision ends the run, so that all ranks stop
	// after the same step.
	for {
		_, err := sess.Step()
		if errors.Is(err, dptrain.ErrBudgetExhausted) || errors.Is(err, dptrain.ErrPlanComplete) {
			return nil, nil
		}
		if err != nil {
			return nil, t.stepFailed(err)
		}
	}
}

// checkSameData checks that every rank trains on rank 0's data.
func (d *dist) checkSameData(s *data.Split) error {
	if d == nil {
		return nil
	}
	return d.same("training examples", s.X, s.Y)
}
