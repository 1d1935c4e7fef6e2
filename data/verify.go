package data

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"os"
	"slices"
)

// fileSHA256 returns the hex SHA-256 of the file at path.
func fileSHA256(path string) (string, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", err
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return "", err
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

// Verify checks the file at path against f's published SHA-256 (or one of f.Also, a
// known-good repackaging). It returns nil when the file matches, and a *FileError naming the
// file and both hashes when it does not.
func Verify(path string, f RemoteFile) error {
	got, err := fileSHA256(path)
	if err != nil {
		return &FileError{Path: path, Problem: fmt.Sprintf("cannot read for checksum: %v", err)}
	}
	if got == f.SHA256 || slices.Contains(f.Also, got) {
		return nil
	}
	return &FileError{Path: path, Problem: fmt.Sprintf("checksum mismatch: want sha256 %s but the file has %s", f.SHA256, got)}
}
