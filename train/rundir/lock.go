package rundir

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
)

// LockFile, in a run's PrivateDir, holds the PID of the one process that writes the run
// directory, for the message a second one gets. The lock itself is a flock on PrivateDir, the
// directory (and one on the file): a second `dptrain train` (or --resume) on the same
// output.dir is refused at once instead of interleaving its metrics, ledger and checkpoints
// with the first's, also when the lock file was removed. The lock goes with the process, also
// when it is killed.
const LockFile = "lock"

// ErrLocked is wrapped by the error of LockDir when another process holds the lock.
var ErrLocked = errors.New("locked by another process")

// Lock is a directory held by this process (LockDir).
type Lock struct {
	path     string   // the directory
	dir      *os.File // the directory, flocked; nil where its file system cannot lock it
	filePath string   // the lock file
	file     *os.File // the lock file, flocked, holding the PID
	released bool
}

// LockDir takes the exclusive lock on dir, and on the file name in it, without waiting,
// creating both, and writes this process's PID into the file. The lock is held on the
// directory itself, so removing the file does not release it (where the file system cannot
// lock a directory, NFS for one, only the file is locked). what names the thing being locked
// in messages (for example "output.dir runs/quickstart"). The returned release closes the
// lock; it may be called more than once.
func LockDir(dir, name, what string) (release func(), err error) {
	l, err := lockDir(dir, name, what, flockNB)
	if err != nil {
		return nil, err
	}
	return l.Release, nil
}

// Acquire takes the lock on dir and on the file name in it, without waiting, as LockDir does,
// and returns it to be checked (Lock.Check) while the directory is written and released after.
func Acquire(dir, name, what string) (*Lock, error) { return lockDir(dir, name, what, flockNB) }

// flockNB takes an exclusive flock on fd without waiting.
func flockNB(fd int) error { return syscall.Flock(fd, syscall.LOCK_EX|syscall.LOCK_NB) }

// lockDir is LockDir, locking the directory with flockDir.
func lockDir(dir, name, what string, flockDir func(fd int) error) (*Lock, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, err
	}
	path := filepath.Join(dir, name)
	inUse := func() error {
		holder := "another process"
		if b, err := os.ReadFile(path); err == nil {
			if pid, err := strconv.Atoi(strings.TrimSpace(string(b))); err == nil && pid > 0 {
				holder = fmt.Sprintf("another process (PID %d)", pid)
			}
		}
		return fmt.Errorf("%s is in use: %s holds its lock (on %s and %s). Wait for it to finish or stop it first, or choose another directory: %w",
			what, holder, dir, path, ErrLocked)
	}
	d, err := os.OpenFile(dir, os.O_RDONLY|syscall.O_DIRECTORY, 0)
	if err != nil {
		return nil, err
	}
	if err := flockDir(int(d.Fd())); err != nil {
		d.Close()
		if errors.Is(err, syscall.EWOULDBLOCK) {
			return nil, inUse()
		}
		// A file system that does not lock directories: the file alone is locked, and check
		// watches that it stays in place.
		d = nil
	}
	// The file too: a process that holds only the file (a dptrain from before the directory
	// was locked) is not run beside.
	f, err := os.OpenFile(path, os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		if d != nil {
			d.Close()
		}
		return nil, err
	}
	if err := flockNB(int(f.Fd())); err != nil {
		f.Close()
		if d != nil {
			d.Close()
		}
		if errors.Is(err, syscall.EWOULDBLOCK) {
			return nil, inUse()
		}
		return nil, fmt.Errorf("locking %s: %w", path, err)
	}
	// The PID is informative only: the lock is the flock, not the file's content.
	if err := f.Truncate(0); err == nil {
		f.WriteAt([]byte(strconv.Itoa(os.Getpid())+"\n"), 0)
	}
	return &Lock{path: dir, dir: d, filePath: path, file: f}, nil
}

// check returns an error when the lock no longer guards what is written through its path: the
// directory there is not the one locked (it was moved away or replaced), or, where only the
// lock file could be locked, that file was removed or replaced (a second process could then
// lock a new one).
func (l *Lock) Check() error {
	if l == nil || l.released {
		return nil
	}
	held, path := l.dir, l.path
	if held == nil {
		held, path = l.file, l.filePath
	}
	hi, err := held.Stat()
	if err != nil {
		return err
	}
	if fi, err := os.Stat(path); err == nil && os.SameFile(hi, fi) {
		return nil
	}
	if l.dir == nil {
		return fmt.Errorf("the lock file %s was removed or replaced while this run held it, and this file system does not lock the directory: a second process could now write the run directory beside this one, so this run stops. Make sure no other dptrain runs on %s, then resume the run with --resume", l.filePath, l.path)
	}
	return fmt.Errorf("%s was removed or replaced while this run held it: stopping, since the run's files (its privacy ledger, checkpoints and metrics) would now be written elsewhere. Put the directory back and resume the run with --resume", l.path)
}

// release closes the lock; it may be called more than once.
func (l *Lock) Release() {
	if l.released {
		return
	}
	l.released = true
	l.file.Close()
	if l.dir != nil {
		l.dir.Close()
	}
}

// CheckNew returns an error unless a new run may write into out: out is absent or empty,
// or a dptrain run directory (it has PrivateDir with its README or lock) without a checkpoint.
func CheckNew(out string) error {
	entries, err := os.ReadDir(out)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("output.dir %s: %w", out, err)
	}
	if len(entries) == 0 {
		return nil
	}
	if !IsRunDir(out) {
		var names []string
		for i, e := range entries {
			if i == 5 {
				names = append(names, fmt.Sprintf("and %d more", len(entries)-5))
				break
			}
			names = append(names, e.Name())
		}
		return fmt.Errorf("output.dir %s is not empty and is not a dptrain run directory (it holds %s): a run would overwrite files there. Choose a new or empty directory with --set output.dir=DIR, or add --resume to continue a dptrain run",
			out, strings.Join(names, ", "))
	}
	if _, err := os.Stat(PrivatePath(out, CheckpointFile)); err == nil {
		return fmt.Errorf("%s already holds a checkpoint: pass --resume to continue that run, or set output.dir to a new directory", out)
	}
	return nil
}

// IsRunDir reports whether dir was written by dptrain: its PrivateDir holds the README or the
// lock that every run writes first.
func IsRunDir(dir string) bool {
	for _, name := range []string{PrivateReadme, LockFile} {
		if fi, err := os.Stat(PrivatePath(dir, name)); err == nil && fi.Mode().IsRegular() {
			return true
		}
	}
	return false
}
