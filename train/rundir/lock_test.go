package rundir

import (
	"errors"
	"os"
	"path/filepath"
	"syscall"
	"testing"
)

// The lock is held on the private directory itself, not only on the lock file.
func TestLockHoldsPrivateDirectory(t *testing.T) {
	dir := t.TempDir()
	release, err := LockDir(dir, "lock", "test dir")
	if err != nil {
		t.Fatal(err)
	}
	defer release()
	f, err := os.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); !errors.Is(err, syscall.EWOULDBLOCK) {
		t.Errorf("flock of the locked directory: %v, want EWOULDBLOCK", err)
	}
}

// Where the file system cannot lock a directory (NFS), only the lock file is locked, and a
// writer stops once that file is removed or replaced; where it can, removing the file changes
// nothing for the holder.
func TestLockFileWatchedWhereDirectoryCannotBeLocked(t *testing.T) {
	for _, c := range []struct {
		name     string
		flockDir func(int) error
		stop     bool
	}{
		{"directory locked", flockNB, false},
		{"file only", func(int) error { return syscall.ENOLCK }, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			l, err := lockDir(dir, LockFile, "test dir", c.flockDir)
			if err != nil {
				t.Fatal(err)
			}
			defer l.Release()
			if err := l.Check(); err != nil {
				t.Fatalf("check of a held lock: %v", err)
			}
			os.Remove(filepath.Join(dir, LockFile))
			if err := l.Check(); (err != nil) != c.stop {
				t.Errorf("check after the lock file was removed: %v; want an error: %v", err, c.stop)
			}
		})
	}
}
