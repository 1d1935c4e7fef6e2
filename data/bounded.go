package data

import (
	"bytes"
	"errors"
	"io"
)

// readAtMost reads up to n bytes from r, growing its buffer with the bytes actually read, so
// that a size announced by a file header is never allocated before the data is there. It
// returns what it read and the error that stopped it early, if any.
func readAtMost(r io.Reader, n int64) ([]byte, error) {
	var buf bytes.Buffer
	buf.Grow(int(min(n, 1<<20)))
	_, err := io.CopyN(&buf, r, n)
	if errors.Is(err, io.EOF) {
		err = io.ErrUnexpectedEOF
	}
	return buf.Bytes(), err
}
