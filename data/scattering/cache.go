package scattering

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"hash"
	"io"
	"math"
	"os"
	"path/filepath"

	"github.com/dptrain/dptrain/data"
)

// cacheVersion changes whenever the transform's output would change.
const cacheVersion = "dptrain-scattering-2"

var cacheMagic = []byte("DPSCAT1\n")

// CachedFeatures is Features with a disk cache in dir: the file is keyed by a SHA-256 of the
// format version, the options and the input dataset (name, source, preprocessing, shape, split
// sizes and every pixel), and ends with a SHA-256 of its contents. A missing, truncated or
// corrupt file is recomputed and rewritten atomically (temporary file, fsync, rename); hit
// reports whether the cache was used. When only writing the cache fails, out holds the
// computed features and err says why the cache could not be written.
func CachedFeatures(ctx context.Context, ds *data.Dataset, opts Options, dir string) (out *data.Dataset, hit bool, err error) {
	opts = opts.withDefaults()
	key := cacheKey(ds, opts)
	path := filepath.Join(dir, "scatternet-"+key[:24]+".bin")
	if out, err := readCache(path, ds, opts); err == nil {
		return out, true, nil
	}
	out, err = Features(ctx, ds, opts)
	if err != nil {
		return nil, false, err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return out, false, fmt.Errorf("scattering: cache directory %s: %w (set DPTRAIN_DATA to a writable directory)", dir, err)
	}
	if err := writeCache(path, out); err != nil {
		return out, false, err
	}
	return out, false, nil
}

func cacheKey(ds *data.Dataset, opts Options) string {
	h := sha256.New()
	fmt.Fprintf(h, "%s\x00%s\x00%s\x00%s\x00%v\x00%v\x00%d\x00", cacheVersion, opts, ds.Name, ds.Source, ds.Preprocessing, ds.Shape, ds.Classes)
	for _, sp := range []*data.Split{ds.Train, ds.Test} {
		fmt.Fprintf(h, "split %d\x00", sp.Len())
		if sp != nil {
			hashFloats(h, sp.X)
		}
	}
	return hex.EncodeToString(h.Sum(nil))
}

func hashFloats(h hash.Hash, x []float32) {
	buf := make([]byte, 4*4096)
	for len(x) > 0 {
		n := min(len(x), 4096)
		for i, v := range x[:n] {
			binary.LittleEndian.PutUint32(buf[4*i:], math.Float32bits(v))
		}
		h.Write(buf[:4*n])
		x = x[n:]
	}
}

type cacheHeader struct {
	Shape         []int    `json:"shape"`
	Train         int      `json:"train"`
	Test          int      `json:"test"`
	Preprocessing []string `json:"preprocessing"`
}

func writeCache(path string, ds *data.Dataset) error {
	err := data.WriteFileAtomic(path, func(f io.Writer) error {
		h := sha256.New()
		w := io.MultiWriter(f, h)
		hdr, _ := json.Marshal(cacheHeader{Shape: ds.Shape, Train: ds.Train.Len(), Test: ds.Test.Len(), Preprocessing: ds.Preprocessing})
		if _, err := w.Write(cacheMagic); err != nil {
			return err
		}
		if err := binary.Write(w, binary.LittleEndian, uint32(len(hdr))); err != nil {
			return err
		}
		if _, err := w.Write(hdr); err != nil {
			return err
		}
		buf := make([]byte, 4*4096)
		for _, sp := range []*data.Split{ds.Train, ds.Test} {
			if sp == nil {
				continue
			}
			for x := sp.X; len(x) > 0; {
				n := min(len(x), 4096)
				for i, v := range x[:n] {
					binary.LittleEndian.PutUint32(buf[4*i:], math.Float32bits(v))
				}
				if _, err := w.Write(buf[:4*n]); err != nil {
					return err
				}
				x = x[n:]
			}
		}
		_, err := f.Write(h.Sum(nil))
		return err
	})
	if err != nil {
		return fmt.Errorf("scattering: cache: %w", err)
	}
	return nil
}

// readCache loads a cache file written for ds and opts, or returns an error saying why not.
func readCache(path string, ds *data.Dataset, opts Options) (*data.Dataset, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	if len(b) < len(cacheMagic)+4+sha256.Size || !bytes.Equal(b[:len(cacheMagic)], cacheMagic) {
		return nil, errors.New("not a scattering cache file")
	}
	body, sum := b[:len(b)-sha256.Size], b[len(b)-sha256.Size:]
	if got := sha256.Sum256(body); !bytes.Equal(got[:], sum) {
		return nil, errors.New("checksum mismatch (truncated or corrupt)")
	}
	p := len(cacheMagic)
	n := int(binary.LittleEndian.Uint32(body[p:]))
	p += 4
	if p+n > len(body) {
		return nil, errors.New("header overruns the file")
	}
	var hdr cacheHeader
	if err := json.Unmarshal(body[p:p+n], &hdr); err != nil {
		return nil, err
	}
	p += n
	if hdr.Train != ds.Train.Len() || hdr.Test != ds.Test.Len() || len(hdr.Shape) != 3 {
		return nil, errors.New("split sizes differ")
	}
	d := hdr.Shape[0] * hdr.Shape[1] * hdr.Shape[2]
	if len(body)-p != 4*d*(hdr.Train+hdr.Test) {
		return nil, errors.New("payload size differs from the header")
	}
	out := &data.Dataset{Name: ds.Name, Shape: hdr.Shape, Classes: ds.Classes, Source: ds.Source, Preprocessing: hdr.Preprocessing}
	read := func(in *data.Split) *data.Split {
		if in == nil {
			return nil
		}
		sp := &data.Split{X: make([]float32, in.N*d), Y: in.Y, N: in.N, D: d}
		for i := range sp.X {
			sp.X[i] = math.Float32frombits(binary.LittleEndian.Uint32(body[p:]))
			p += 4
		}
		return sp
	}
	out.Train = read(ds.Train)
	out.Test = read(ds.Test)
	return out, nil
}
