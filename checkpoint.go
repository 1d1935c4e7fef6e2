package dptrain

import (
	"encoding/gob"
	"errors"
	"fmt"
	"io"
	"math"
	"slices"

	"github.com/dptrain/dptrain/accounting"
	"github.com/dptrain/dptrain/ledger"
	"github.com/dptrain/dptrain/optim"
)

// checkpointVersion is written first by Checkpoint.WriteTo and checked by ReadCheckpoint.
const checkpointVersion = 1

// Checkpoint is everything a Session needs to continue where it stopped: the model's
// parameters, the optimizer's state, the sampler's position and, for a seeded session, the
// positions of its random streams, and the ledger of every record released so far. It holds
// functions of the private data (parameters that were never released, the ledger's realised
// batch sizes): keep it with the data, never publish it.
type Checkpoint struct {
	// Step is the number of steps run.
	Step int
	// Params are the model's parameters after Step steps.
	Params []float32
	// OptimizerVectors and OptimizerScalars are the optimizer's state (optim.Checkpointer).
	OptimizerVectors map[string][]float32
	OptimizerScalars map[string]float64
	// Sampler is the sampler's position (data.Sampler.MarshalBinary).
	Sampler []byte
	// Streams are the seeded random streams' positions, by name ("noise", "sampler"); empty for
	// a private session, whose fresh streams are drawn from crypto/rand again.
	Streams map[string][]byte
	// Ledger holds every record composed so far: Restore composes it again, so that the
	// privacy spent before the checkpoint is never given back.
	Ledger []accounting.Step
	// LedgerLines and LedgerHead are the ledger store's length and head (ledger.Anchor) when
	// the checkpoint was taken, for a session that keeps one (Privacy.Ledger): Restore
	// refuses a checkpoint the store does not hold, and composes the store, not Ledger.
	LedgerLines int
	LedgerHead  string
}

// Checkpoint returns the session's state after the steps run so far.
func (s *Session) Checkpoint() (*Checkpoint, error) {
	c := &Checkpoint{Step: s.opt.Steps(), Params: slices.Clone(s.model.Params()), Ledger: s.Ledger()}
	if cp, ok := s.opt.(optim.Checkpointer); ok {
		v, sc := cp.State()
		c.OptimizerVectors, c.OptimizerScalars = map[string][]float32{}, sc
		for k, x := range v {
			c.OptimizerVectors[k] = slices.Clone(x)
		}
	} else if c.Step > 0 {
		return nil, fmt.Errorf("dptrain: optimizer %T cannot save its state (optim.Checkpointer), so the session cannot be checkpointed exactly", s.opt)
	}
	if s.store != nil {
		// The store's lines reach the disk before a checkpoint that follows them can.
		if err := s.store.Sync(); err != nil {
			return nil, fmt.Errorf("dptrain: the ledger store: %w", err)
		}
		c.LedgerLines, c.LedgerHead = s.store.Lines(), s.store.Head()
	}
	var err error
	if c.Sampler, err = s.sampler.MarshalBinary(); err != nil {
		return nil, fmt.Errorf("dptrain: the sampler's state: %w", err)
	}
	for name, n := range s.streams {
		if !n.Reproducible() {
			continue
		}
		b, err := n.MarshalBinary()
		if err != nil {
			return nil, fmt.Errorf("dptrain: the %s stream: %w", name, err)
		}
		if c.Streams == nil {
			c.Streams = map[string][]byte{}
		}
		c.Streams[name] = b
	}
	return c, nil
}

// Restore puts a new session (no step run, nothing composed) in the state c was taken in, and
// composes c's ledger into its accountants. The session must have been built as the one that
// wrote c (same model, data, sampler scheme and size, optimizer); a mismatch that can be
// detected is an error naming it, and leaves the session unusable.
func (s *Session) Restore(c *Checkpoint) error {
	if c == nil {
		return errors.New("dptrain: Restore: the checkpoint is nil")
	}
	if s.opt.Steps() != 0 || s.composed != 0 || s.err != nil || (s.store == nil && s.live != nil && s.live.Steps() != 0) {
		return fmt.Errorf("dptrain: Restore: the session has already run %d steps: restore into a freshly built session", s.opt.Steps())
	}
	if s.live == nil && len(c.Ledger) > 0 {
		return errors.New("dptrain: Restore: the checkpoint holds a privacy ledger and the session has no accountants: build it with the accountants that wrote it")
	}
	// Every step releases at least one record: a ledger that stands for fewer steps than the
	// checkpoint ran would give back privacy that was spent.
	if recorded := ledgerSteps(c.Ledger); s.live != nil && recorded < c.Step {
		return fmt.Errorf("dptrain: Restore: the checkpoint ran %d steps and its ledger records %d: ε cannot be computed from it (the ledger was emptied or cut); restore from an intact checkpoint", c.Step, recorded)
	}
	if s.store != nil {
		// The store already holds, and the accountants have composed, every step the
		// checkpoint's ledger records, and the steps of every other trajectory.
		err := s.store.Reaches(ledger.Anchor{Lines: c.LedgerLines, Head: c.LedgerHead, From: fmt.Sprintf("the checkpoint of step %d", c.Step)})
		if err != nil {
			return fmt.Errorf("dptrain: Restore: %w", fixStoreError(err))
		}
	}
	p := s.model.Params()
	if len(c.Params) != len(p) {
		return fmt.Errorf("dptrain: Restore: the checkpoint holds %d parameters, the model has %d: restore into the model that wrote it", len(c.Params), len(p))
	}
	for i, v := range c.Params {
		if math.IsNaN(float64(v)) || math.IsInf(float64(v), 0) {
			return fmt.Errorf("dptrain: Restore: parameter %d of the checkpoint is %v: the checkpoint is damaged; use an older one", i, v)
		}
	}
	if err := s.sampler.UnmarshalBinary(c.Sampler); err != nil {
		return fmt.Errorf("dptrain: Restore: %w", err)
	}
	if cp, ok := s.opt.(optim.Checkpointer); ok {
		if err := cp.Restore(c.OptimizerVectors, c.OptimizerScalars); err != nil {
			return fmt.Errorf("dptrain: Restore: %w", err)
		}
	} else if c.Step > 0 {
		return fmt.Errorf("dptrain: Restore: optimizer %T cannot restore its state (optim.Checkpointer)", s.opt)
	}
	if got := s.opt.Steps(); got != c.Step {
		return fmt.Errorf("dptrain: Restore: the optimizer's state is at step %d, the checkpoint at step %d: the checkpoint is damaged", got, c.Step)
	}
	for name, b := range c.Streams {
		n, ok := s.streams[name]
		if !ok || !n.Reproducible() {
			return fmt.Errorf("dptrain: Restore: the checkpoint carries the seeded stream %q and the session has no seeded stream of that name: build the session with the seed that wrote it", name)
		}
		if err := n.UnmarshalBinary(b); err != nil {
			return fmt.Errorf("dptrain: Restore: the %s stream: %w", name, err)
		}
	}
	copy(p, c.Params)
	if s.store != nil {
		if err := s.continueFrom(c.Step); err != nil {
			return s.halt(err)
		}
	} else if s.live != nil {
		for _, r := range c.Ledger {
			var refused *accounting.RefusedError
			if err := s.live.Compose(r); err != nil && !errors.As(err, &refused) {
				return s.halt(fmt.Errorf("dptrain: Restore: the ledger: %w", err))
			}
		}
	}
	// The restored positions are where the session's own steps begin.
	s.rebase()
	return nil
}

// WriteTo writes c in a versioned binary form that ReadCheckpoint reads back.
func (c *Checkpoint) WriteTo(w io.Writer) (int64, error) {
	cw := &countingWriter{w: w}
	enc := gob.NewEncoder(cw)
	if err := enc.Encode(checkpointVersion); err != nil {
		return cw.n, err
	}
	err := enc.Encode(c)
	return cw.n, err
}

// ReadCheckpoint reads a checkpoint written by Checkpoint.WriteTo.
func ReadCheckpoint(r io.Reader) (*Checkpoint, error) {
	dec := gob.NewDecoder(r)
	var v int
	if err := dec.Decode(&v); err != nil {
		return nil, fmt.Errorf("dptrain: not a session checkpoint (%v): pass a file written by Checkpoint.WriteTo", err)
	}
	if v != checkpointVersion {
		return nil, fmt.Errorf("dptrain: session checkpoint version %d, this dptrain reads version %d", v, checkpointVersion)
	}
	c := new(Checkpoint)
	if err := dec.Decode(c); err != nil {
		return nil, fmt.Errorf("dptrain: the session checkpoint is damaged (%v): use an older one", err)
	}
	return c, nil
}

// countingWriter counts the bytes written through it, for io.WriterTo.
type countingWriter struct {
	w io.Writer
	n int64
}

func (c *countingWriter) Write(p []byte) (int, error) {
	n, err := c.w.Write(p)
	c.n += int64(n)
	return n, err
}

// ledgerSteps is the number of steps the records stand for.
func ledgerSteps(ledger []accounting.Step) int {
	n := 0
	for _, r := range ledger {
		n += r.Steps()
	}
	return n
}
