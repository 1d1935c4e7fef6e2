package models

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
)

// Parameter file format, version 1 (all integers little-endian):
//
//	offset      size  field
//	0           8     magic "DPTRNPRM"
//	8           4     format version, uint32 (1)
//	12          4     length L of the spec, uint32
//	16          L     the Spec as JSON
//	16+L        8     parameter count P, uint64
//	24+L        4P    the flat parameter vector, IEEE-754 float32
//	24+L+4P     32    SHA-256 of every preceding byte
//
// Reading checks the magic, the version, that every length fits in the file, the checksum,
// that the spec's sizes are bounded, that it builds, and that the count equals the spec's
// parameter count.
const (
	paramMagic   = "DPTRNPRM"
	paramVersion = 1
	maxSpecBytes = 1 << 20
)

// WriteParams writes the network's spec and parameters to w in the parameter file format.
func (nw *Network) WriteParams(w io.Writer) error {
	spec, err := json.Marshal(nw.spec)
	if err != nil {
		return fmt.Errorf("models: encoding spec: %w", err)
	}
	h := sha256.New()
	bw := bufio.NewWriter(io.MultiWriter(w, h))
	var hdr [8]byte
	bw.WriteString(paramMagic)
	binary.LittleEndian.PutUint32(hdr[:4], paramVersion)
	bw.Write(hdr[:4])
	binary.LittleEndian.PutUint32(hdr[:4], uint32(len(spec)))
	bw.Write(hdr[:4])
	bw.Write(spec)
	binary.LittleEndian.PutUint64(hdr[:], uint64(len(nw.params)))
	bw.Write(hdr[:])
	for _, v := range nw.params {
		binary.LittleEndian.PutUint32(hdr[:4], math.Float32bits(v))
		bw.Write(hdr[:4])
	}
	if err := bw.Flush(); err != nil {
		return fmt.Errorf("models: writing parameters: %w", err)
	}
	if _, err := w.Write(h.Sum(nil)); err != nil {
		return fmt.Errorf("models: writing checksum: %w", err)
	}
	return nil
}

// ReadParams reads a parameter file and builds the network it describes, with opts as New takes
// them (graph.ReadParams gives it the graph engine). Every size in the file is checked against
// the bytes actually present, and the checksum is verified, before any memory is allocated for
// the network: a crafted or damaged file is an error, never an out-of-memory crash.
func ReadParams(r io.Reader, opts ...Option) (*Network, error) {
	b, err := io.ReadAll(r)
	if err != nil {
		return nil, fmt.Errorf("models: reading parameters: %w", err)
	}
	const fixed = 16 + 8 + sha256.Size // header, count, checksum
	if len(b) < 16 {
		return nil, fmt.Errorf("models: reading parameter header: the file has %d bytes: it is truncated or not a parameter file", len(b))
	}
	if string(b[:8]) != paramMagic {
		return nil, fmt.Errorf("models: not a dptrain parameter file (magic %q, want %q)", b[:8], paramMagic)
	}
	if v := binary.LittleEndian.Uint32(b[8:12]); v != paramVersion {
		return nil, fmt.Errorf("models: parameter file version %d, this build reads version %d", v, paramVersion)
	}
	l := uint64(binary.LittleEndian.Uint32(b[12:16]))
	if l > maxSpecBytes || l > uint64(len(b)) || uint64(len(b)) < fixed+l {
		return nil, fmt.Errorf("models: the parameter file's spec length %d does not fit in its %d bytes: the file is truncated or corrupt", l, len(b))
	}
	n := binary.LittleEndian.Uint64(b[16+l : 24+l])
	if want := uint64(len(b)) - fixed - l; n > want/4 || 4*n != want {
		return nil, fmt.Errorf("models: the file holds %d bytes of parameters but its header promises %d parameters: the file is truncated or corrupt", want, n)
	}
	body, sum := b[:len(b)-sha256.Size], b[len(b)-sha256.Size:]
	if got := sha256.Sum256(body); !bytes.Equal(got[:], sum) {
		return nil, errors.New("models: parameter file checksum mismatch: the file is corrupt or truncated")
	}
	var spec Spec
	if err := json.Unmarshal(b[16:16+l], &spec); err != nil {
		return nil, fmt.Errorf("models: decoding spec: %w", err)
	}
	// Lay the spec out and bound its sizes before building it.
	res, err := spec.resolve()
	if err != nil {
		return nil, fmt.Errorf("models: the file's spec does not build: %w", err)
	}
	p, err := makePlan(res)
	if err != nil {
		return nil, fmt.Errorf("models: the file's spec does not build: %w", err)
	}
	if err := p.checkSizes(res.input, int(n)); err != nil {
		return nil, fmt.Errorf("%w: the file holds only %d parameters", err, n)
	}
	if uint64(p.nparam) != n {
		return nil, fmt.Errorf("models: the file holds %d parameters, its spec %q needs %d", n, res.name, p.nparam)
	}
	nw, err := newUninitialised(spec, opts)
	if err != nil {
		return nil, fmt.Errorf("models: the file's spec does not build: %w", err)
	}
	raw := b[24+l : len(b)-sha256.Size]
	for i := range nw.params {
		nw.params[i] = math.Float32frombits(binary.LittleEndian.Uint32(raw[4*i:]))
	}
	if err := CheckFinite(nw.params, "the model file"); err != nil {
		return nil, fmt.Errorf("models: %w", err)
	}
	return nw, nil
}

// CheckFinite returns an error naming the first parameter of params that is NaN or infinite;
// what names where they were read from ("the model file", "the checkpoint ..."). dptrain never
// saves such parameters (a run whose parameters stop being finite stops before saving), so
// one in a file means the file is damaged or was written by a run that diverged.
func CheckFinite(params []float32, what string) error {
	for k, v := range params {
		if f := float64(v); math.IsNaN(f) || math.IsInf(f, 0) {
			kind := "NaN"
			if math.IsInf(f, 0) {
				kind = "infinite"
			}
			return fmt.Errorf("parameter %d of %s is %s: the file is damaged or the run diverged", k, what, kind)
		}
	}
	return nil
}

// Save writes the network to path atomically: to a temporary file in the same directory,
// synced, then renamed over path.
func Save(path string, nw *Network) (err error) {
	dir := filepath.Dir(path)
	f, err := os.CreateTemp(dir, filepath.Base(path)+".tmp*")
	if err != nil {
		return fmt.Errorf("models: saving parameters: %w", err)
	}
	f.Chmod(0o644) // a model is meant to be shared; CreateTemp makes it private
	defer func() {
		if err != nil {
			f.Close()
			os.Remove(f.Name())
		}
	}()
	if err = nw.WriteParams(f); err != nil {
		return err
	}
	if err = f.Sync(); err != nil {
		return fmt.Errorf("models: syncing %s: %w", f.Name(), err)
	}
	if err = f.Close(); err != nil {
		return fmt.Errorf("models: closing %s: %w", f.Name(), err)
	}
	if err = os.Rename(f.Name(), path); err != nil {
		return fmt.Errorf("models: renaming to %s: %w", path, err)
	}
	if d, derr := os.Open(dir); derr == nil { // make the rename durable; best effort
		d.Sync()
		d.Close()
	}
	return nil
}

// Load reads the network saved at path (ReadParams).
func Load(path string, opts ...Option) (*Network, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("models: loading parameters: %w", err)
	}
	defer f.Close()
	nw, err := ReadParams(f, opts...)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return nw, nil
}
