package ledger

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"syscall"
)

// Store is a directory that holds one ledger (FileName), opened by one process at a time: the
// process holds an exclusive lock on the directory itself, so that removing a file inside it
// frees nothing, and a second process is refused instead of interleaving its lines.
type Store struct {
	*File
	dir *os.File
}

// ErrInUse is the error of OpenStore when another process holds the store.
var ErrInUse = errors.New("the ledger store is in use by another process")

// OpenStore opens the ledger store in dir, creating the directory and an empty ledger when
// they do not exist, locks it and verifies its ledger (Open). A damaged ledger is a *Error;
// a store that another process holds is ErrInUse (wrapped, naming the directory).
func OpenStore(dir string, warn func(format string, args ...any)) (*Store, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("ledger store: %w", err)
	}
	d, err := os.Open(dir)
	if err != nil {
		return nil, fmt.Errorf("ledger store: %w", err)
	}
	if err := syscall.Flock(int(d.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		d.Close()
		if errors.Is(err, syscall.EWOULDBLOCK) {
			return nil, fmt.Errorf("ledger store %s: %w: wait for it to finish, or give this session another store only if it trains on other data", dir, ErrInUse)
		}
		return nil, fmt.Errorf("ledger store %s: cannot lock it (%v): keep the store on a local file system", dir, err)
	}
	f, err := Open(filepath.Join(dir, FileName), nil, true, warn)
	if err != nil {
		d.Close()
		return nil, err
	}
	return &Store{File: f, dir: d}, nil
}

// Close flushes and closes the ledger and releases the store.
func (s *Store) Close() error {
	err := errors.Join(s.File.Sync(), s.File.Close())
	return errors.Join(err, s.dir.Close())
}
