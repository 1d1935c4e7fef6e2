package rundir

import (
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"math"
	"os"
	"slices"

	"github.com/dptrain/dptrain/accounting"
	"github.com/dptrain/dptrain/data"
	"github.com/dptrain/dptrain/train/config"
)

// Checkpoint is the state a run needs to resume: the parameters, the update rule's state, the
// step counter and the privacy ledger's length and head (the accountants are rebuilt by
// replaying the run's ledger file, verified against them, so ε continues from where it was and
// is never reset).
//
// File format (little-endian), written atomically:
//
//	"DPTCKPT1"                 8-byte magic
//	uint32 n, n bytes          JSON header (CheckpointHeader)
//	for each vector in the header's Vectors, in order: Len float32 values
//	32 bytes                   SHA-256 of everything before it
type Checkpoint struct {
	Header  CheckpointHeader
	Vectors map[string][]float32
}

// CheckpointHeader is the JSON part of a checkpoint.
type CheckpointHeader struct {
	Version int `json:"version"`
	// Step is the number of steps completed.
	Step int `json:"step"`
	// ConfigHash ties the checkpoint to the run's config; resuming under a different config is
	// refused.
	ConfigHash string `json:"config_hash"`
	// Config is the run's canonical config, so that a resume under a different config can
	// name the keys that differ.
	Config config.Canonical `json:"config,omitempty"`
	// ElapsedSec is the training time spent up to Step, over every resume.
	ElapsedSec float64 `json:"elapsed_s,omitempty"`
	// NoiseMultiplier is the σ the run used (after calibration, when auto).
	NoiseMultiplier float64 `json:"noise_multiplier"`
	// Ledger is the run-length list of every step record composed so far. A resume of the
	// YAML trainer composes the ledger file (LedgerFile), never this copy.
	Ledger []accounting.Step `json:"ledger"`
	// LedgerLines is the number of lines of the run's ledger file when the checkpoint was
	// written, LedgerHead the SHA-256 (hex) of the last of them (LedgerGenesis when there are
	// none): a resume refuses a ledger that does not reach them. Covered by the checksum like
	// the rest of the header; empty for a run without accountants, and in checkpoints written
	// before the ledger was chained.
	LedgerLines int    `json:"ledger_lines,omitempty"`
	LedgerHead  string `json:"ledger_head,omitempty"`
	// State holds the optimizer's scalar state (e.g. Adam's step count).
	State map[string]float64 `json:"state,omitempty"`
	// Streams holds the states of the noise and sampling generators of a seeded run, so that
	// it resumes exactly; secure runs never store them (they draw fresh randomness instead).
	Streams map[string][]byte `json:"streams,omitempty"`
	// Sampler is the sampler's state (data.Sampler's MarshalBinary): its position and, for the
	// partition schemes, its permutation, so that a resumed shuffle-once run continues the same
	// cyclic order. Like the whole checkpoint it is for the operator only.
	Sampler []byte `json:"sampler,omitempty"`
	// Vectors lists the float32 vectors that follow the header, in order.
	Vectors []VectorInfo `json:"vectors"`
}

// VectorInfo names one float32 vector of a checkpoint.
type VectorInfo struct {
	Name string `json:"name"`
	Len  int    `json:"len"`
}

const checkpointMagic = "DPTCKPT1"

// SaveCheckpoint writes c to path atomically: a crash leaves the previous checkpoint intact.
func SaveCheckpoint(path string, c *Checkpoint) error { return SaveCheckpointThrough(path, c, nil) }

// SaveCheckpointThrough is SaveCheckpoint with the writer of the temporary file wrapped by
// wrap (nil: not wrapped), e.g. to make it fail as a full disk would.
func SaveCheckpointThrough(path string, c *Checkpoint, wrap func(io.Writer) io.Writer) error {
	c.Header.Version = 1
	c.Header.Vectors = c.Header.Vectors[:0]
	for _, name := range slices.Sorted(maps.Keys(c.Vectors)) {
		c.Header.Vectors = append(c.Header.Vectors, VectorInfo{name, len(c.Vectors[name])})
	}
	hdr, err := json.Marshal(c.Header)
	if err != nil {
		return fmt.Errorf("checkpoint: %w", err)
	}
	return data.WriteFileAtomic(path, func(w io.Writer) error {
		if wrap != nil {
			w = wrap(w)
		}
		h := sha256.New()
		mw := io.MultiWriter(w, h)
		var n [4]byte
		binary.LittleEndian.PutUint32(n[:], uint32(len(hdr)))
		mw.Write([]byte(checkpointMagic))
		mw.Write(n[:])
		mw.Write(hdr)
		buf := make([]byte, 4*4096)
		for _, vi := range c.Header.Vectors {
			v := c.Vectors[vi.Name]
			for len(v) > 0 {
				k := min(len(v), 4096)
				for i, x := range v[:k] {
					binary.LittleEndian.PutUint32(buf[4*i:], math.Float32bits(x))
				}
				if _, err := mw.Write(buf[:4*k]); err != nil {
					return err
				}
				v = v[k:]
			}
		}
		_, err := w.Write(h.Sum(nil))
		return err
	})
}

// LoadCheckpoint reads and verifies a checkpoint written by SaveCheckpoint.
func LoadCheckpoint(path string) (*Checkpoint, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("checkpoint: %w", err)
	}
	return DecodeCheckpoint(b, path)
}

// DecodeCheckpoint is LoadCheckpoint on the file's bytes; path names it in messages. Every
// length in the file is checked against the bytes that remain before anything is allocated.
func DecodeCheckpoint(b []byte, path string) (*Checkpoint, error) {
	bad := func(what string) error {
		return fmt.Errorf("checkpoint %s: %s: the file is damaged; resume from an older checkpoint or start again", path, what)
	}
	if len(b) < len(checkpointMagic)+4+sha256.Size || string(b[:8]) != checkpointMagic {
		return nil, bad("not a dptrain checkpoint (bad magic or too short)")
	}
	body, sum := b[:len(b)-sha256.Size], b[len(b)-sha256.Size:]
	if got := sha256.Sum256(body); !bytes.Equal(got[:], sum) {
		return nil, bad("SHA-256 mismatch (truncated or corrupt)")
	}
	rest := body[8:]
	n := uint64(binary.LittleEndian.Uint32(rest))
	rest = rest[4:]
	if n > uint64(len(rest)) {
		return nil, bad("header truncated")
	}
	c := &Checkpoint{Vectors: map[string][]float32{}}
	if err := json.Unmarshal(rest[:n], &c.Header); err != nil {
		return nil, bad("header is not valid JSON")
	}
	rest = rest[n:]
	if c.Header.Version != 1 {
		return nil, fmt.Errorf("checkpoint %s: version %d, this dptrain reads version 1", path, c.Header.Version)
	}
	for _, vi := range c.Header.Vectors {
		if vi.Len < 0 || vi.Len > len(rest)/4 {
			return nil, bad("vector " + vi.Name + " truncated")
		}
		if _, dup := c.Vectors[vi.Name]; dup {
			return nil, bad("vector " + vi.Name + " listed twice")
		}
		v := make([]float32, vi.Len)
		for i := range v {
			v[i] = math.Float32frombits(binary.LittleEndian.Uint32(rest[4*i:]))
		}
		rest = rest[4*vi.Len:]
		c.Vectors[vi.Name] = v
	}
	if len(rest) > 0 {
		return nil, bad("trailing bytes after the last vector")
	}
	return c, nil
}
