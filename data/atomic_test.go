package data

import (
	"errors"
	"io"
	"os"
	"path/filepath"
	"testing"
)

func TestWriteFileAtomicKeepsOldOnFailure(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "ckpt")
	if err := WriteFileAtomic(path, func(w io.Writer) error { _, err := w.Write([]byte("good")); return err }); err != nil {
		t.Fatal(err)
	}
	fail := errors.New("disk on fire")
	err := WriteFileAtomic(path, func(w io.Writer) error {
		w.Write([]byte("half"))
		return fail
	})
	if !errors.Is(err, fail) {
		t.Fatalf("error %v, want %v", err, fail)
	}
	b, _ := os.ReadFile(path)
	if string(b) != "good" {
		t.Errorf("file holds %q after a failed write, want the old contents", b)
	}
	ents, _ := os.ReadDir(dir)
	if len(ents) != 1 {
		t.Errorf("temporary files left behind: %v", ents)
	}
}
