package data

import (
	"bytes"
	"compress/gzip"
	"encoding/binary"
	"os"
	"path/filepath"
	"testing"
)

// idxBytes encodes an IDX file of unsigned bytes by hand: magic 0x00 0x00 0x08 ndims, the
// big-endian dimensions, then the payload.
func idxBytes(dims []int, payload []byte) []byte {
	var b bytes.Buffer
	b.Write([]byte{0, 0, 0x08, byte(len(dims))})
	for _, d := range dims {
		binary.Write(&b, binary.BigEndian, uint32(d))
	}
	b.Write(payload)
	return b.Bytes()
}

func gzipBytes(t testing.TB, raw []byte) []byte {
	t.Helper()
	var b bytes.Buffer
	zw := gzip.NewWriter(&b)
	if _, err := zw.Write(raw); err != nil {
		t.Fatal(err)
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

func writeFile(t *testing.T, path string, b []byte) string {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// fakeIDXSet returns the four gzip-compressed files of a tiny MNIST-like set of 28×28 images:
// nTrain and nTest examples whose pixel j of example i is (i+j) mod 256 and whose label is
// i mod 10.
func fakeIDXSet(t *testing.T, nTrain, nTest int) map[string][]byte {
	t.Helper()
	files := map[string][]byte{}
	for _, s := range []struct {
		prefix string
		n      int
	}{{"train", nTrain}, {"t10k", nTest}} {
		pix := make([]byte, s.n*28*28)
		lab := make([]byte, s.n)
		for i := range s.n {
			for j := range 28 * 28 {
				pix[i*784+j] = byte((i + j) % 256)
			}
			lab[i] = byte(i % 10)
		}
		files[s.prefix+"-images-idx3-ubyte.gz"] = gzipBytes(t, idxBytes([]int{s.n, 28, 28}, pix))
		files[s.prefix+"-labels-idx1-ubyte.gz"] = gzipBytes(t, idxBytes([]int{s.n}, lab))
	}
	return files
}

func writeFiles(t *testing.T, dir string, files map[string][]byte) {
	t.Helper()
	for name, b := range files {
		writeFile(t, filepath.Join(dir, name), b)
	}
}

func gunzip(b []byte) ([]byte, error) {
	zr, err := gzip.NewReader(bytes.NewReader(b))
	if err != nil {
		return nil, err
	}
	var out bytes.Buffer
	_, err = out.ReadFrom(zr)
	return out.Bytes(), err
}

// noise returns n bytes of a fixed pseudo-random sequence (a linear congruential generator),
// which gzip cannot compress much.
func noise(n int) []byte {
	b := make([]byte, n)
	x := uint32(12345)
	for i := range b {
		x = x*1664525 + 1013904223
		b[i] = byte(x >> 24)
	}
	return b
}
