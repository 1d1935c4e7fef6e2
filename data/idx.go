package data

import (
	"bufio"
	"compress/flate"
	"compress/gzip"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
)

// The IDX format (LeCun et al., "THE MNIST DATABASE of handwritten digits") is a 4-byte magic
// number 0x00 0x00 <type> <ndims>, ndims big-endian uint32 dimensions, then the data in
// row-major order. MNIST and Fashion-MNIST use type 0x08 (unsigned byte): images are idx3
// (count, rows, cols) and labels idx1 (count). Files are usually gzip-compressed; readIDX
// detects that from the gzip magic bytes 0x1f 0x8b rather than from the file name.

const (
	idxTypeUbyte = 0x08
	// maxIDXBytes bounds the payload a header may announce, so that a corrupt header does not
	// make the reader allocate an absurd buffer. The largest file used here is 47,040,000 bytes.
	maxIDXBytes = 1 << 32
)

// idxFile is the decoded content of one IDX file of unsigned bytes.
type idxFile struct {
	dims []int
	data []byte
}

// readIDX reads the IDX file at path, which must hold unsigned bytes in ndims dimensions.
// what names the content for messages ("images" or "labels"); dataset names the dataset for
// the re-download hint.
func readIDX(path, dataset, what string, ndims int) (*idxFile, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, &FileError{Path: path, Problem: fmt.Sprintf("cannot open: %v", err), Hint: redownloadHint(dataset)}
	}
	defer f.Close()
	return decodeIDX(f, path, dataset, what, ndims)
}

// decodeIDX is readIDX on an open stream; path is used in messages only.
func decodeIDX(r io.Reader, path, dataset, what string, ndims int) (*idxFile, error) {
	br := bufio.NewReaderSize(r, 1<<16)
	src := io.Reader(br)
	compressed := false
	if head, err := br.Peek(2); err == nil && head[0] == 0x1f && head[1] == 0x8b {
		zr, err := gzip.NewReader(br)
		if err != nil {
			return nil, fileErrorf(path, dataset, "corrupt gzip header: %v", err)
		}
		defer zr.Close()
		zr.Multistream(false)
		src, compressed = zr, true
	}
	errf := func(format string, args ...any) (*idxFile, error) {
		return nil, fileErrorf(path, dataset, format, args...)
	}

	var magic [4]byte
	if n, err := io.ReadFull(src, magic[:]); err != nil {
		if isStreamCorruption(err) {
			return errf("corrupt gzip data: %v", err)
		}
		return errf("truncated: want a 4-byte IDX magic number but the file holds %d bytes", n)
	}
	wantMagic := uint32(idxTypeUbyte)<<8 | uint32(ndims)
	if got := binary.BigEndian.Uint32(magic[:]); got != wantMagic {
		return errf("wrong magic number: want 0x%08x (IDX %s: unsigned bytes in %d dimensions) but found 0x%08x", wantMagic, what, ndims, got)
	}
	header := make([]byte, 4*ndims)
	if n, err := io.ReadFull(src, header); err != nil {
		if isStreamCorruption(err) {
			return errf("corrupt gzip data: %v", err)
		}
		return errf("truncated: the IDX header needs %d dimension bytes but only %d follow the magic number", len(header), n)
	}
	dims := make([]int, ndims)
	total := uint64(1)
	for i := range dims {
		dims[i] = int(binary.BigEndian.Uint32(header[4*i:]))
		total *= uint64(dims[i])
		if total > maxIDXBytes {
			return errf("implausible IDX header: dimensions %v announce more than %d bytes", dims[:i+1], uint64(maxIDXBytes))
		}
	}
	// Grow with the bytes actually read: a crafted header announcing a large file must not
	// allocate it up front.
	data, err := readAtMost(src, int64(total))
	if n := len(data); err != nil || uint64(n) != total {
		if isStreamCorruption(err) {
			return errf("corrupt gzip data after %d of %d %s bytes: %v", n, total, what, err)
		}
		return errf("truncated: header says %s but only %d bytes follow", describeIDX(what, dims), n)
	}
	// Read to the end: this is where gzip verifies its CRC-32, and it catches extra bytes.
	extra, err := io.Copy(io.Discard, src)
	if err != nil {
		if errors.Is(err, io.ErrUnexpectedEOF) {
			return errf("truncated: the gzip stream ends before its checksum trailer")
		}
		if isStreamCorruption(err) || compressed {
			return errf("corrupt gzip data: %v", err)
		}
		return errf("read error: %v", err)
	}
	if extra > 0 {
		return errf("header says %s but %d more bytes follow them; the file is corrupt or not what its header claims", describeIDX(what, dims), extra)
	}
	return &idxFile{dims: dims, data: data}, nil
}

// describeIDX renders dims for messages, e.g. "60000 images of 28×28 (47040000 bytes)".
func describeIDX(what string, dims []int) string {
	if len(dims) == 0 {
		return what
	}
	total := 1
	for _, d := range dims {
		total *= d
	}
	if len(dims) == 1 {
		return fmt.Sprintf("%d %s (%d bytes)", dims[0], what, total)
	}
	shape := make([]string, len(dims)-1)
	for i, d := range dims[1:] {
		shape[i] = fmt.Sprint(d)
	}
	return fmt.Sprintf("%d %s of %s (%d bytes)", dims[0], what, strings.Join(shape, "×"), total)
}

// isStreamCorruption reports whether err says the compressed stream itself is damaged, as
// opposed to ending early.
func isStreamCorruption(err error) bool {
	var ce flate.CorruptInputError
	return errors.Is(err, gzip.ErrChecksum) || errors.Is(err, gzip.ErrHeader) || errors.As(err, &ce)
}

// readIDXSplit reads a pair of IDX files (images and labels) into a Split with pixels scaled
// to [0, 1], checking them against the image shape [rows, cols] and number of classes expected.
func readIDXSplit(imagesPath, labelsPath, dataset string, rows, cols, classes int) (*Split, error) {
	img, err := readIDX(imagesPath, dataset, "images", 3)
	if err != nil {
		return nil, err
	}
	if img.dims[1] != rows || img.dims[2] != cols {
		return nil, fileErrorf(imagesPath, dataset, "dimensions mismatch: %s images are %d×%d but the file holds %d×%d images", dataset, rows, cols, img.dims[1], img.dims[2])
	}
	lab, err := readIDX(labelsPath, dataset, "labels", 1)
	if err != nil {
		return nil, err
	}
	n := img.dims[0]
	if lab.dims[0] != n {
		return nil, fileErrorf(labelsPath, dataset, "count mismatch: %s holds %d images but this file holds %d labels; the two files are from different sets", imagesPath, n, lab.dims[0])
	}
	y := make([]int32, n)
	for i, l := range lab.data {
		if int(l) >= classes {
			return nil, fileErrorf(labelsPath, dataset, "label out of range: example %d has label %d, want 0..%d", i, l, classes-1)
		}
		y[i] = int32(l)
	}
	return &Split{X: scaleBytes(img.data), Y: y, N: n, D: rows * cols}, nil
}

// scaleBytes maps pixel bytes to float32 in [0, 1] (division by 255).
func scaleBytes(b []byte) []float32 {
	var lut [256]float32
	for i := range lut {
		lut[i] = float32(i) / 255
	}
	x := make([]float32, len(b))
	for i, v := range b {
		x[i] = lut[v]
	}
	return x
}
