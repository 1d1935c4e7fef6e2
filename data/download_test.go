package data

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// mirror is a local stand-in for a dataset mirror.
type mirror struct {
	files map[string][]byte
	// cut, when > 0, makes the next response for a file send only cut bytes of the body and
	// then drop the connection (once).
	cut         map[string]int
	ignoreRange bool
	mu          sync.Mutex
	ranges      []string // the Range headers received
	hits        int
}

func (m *mirror) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	name := strings.TrimPrefix(r.URL.Path, "/")
	m.mu.Lock()
	m.hits++
	m.ranges = append(m.ranges, r.Header.Get("Range"))
	cut := m.cut[name]
	delete(m.cut, name)
	m.mu.Unlock()
	b, ok := m.files[name]
	if !ok {
		http.NotFound(w, r)
		return
	}
	if m.ignoreRange {
		r.Header.Del("Range")
	}
	if cut > 0 {
		w.Header().Set("Content-Length", strconv.Itoa(len(b)))
		w.WriteHeader(http.StatusOK)
		w.Write(b[:cut])
		w.(http.Flusher).Flush()
		conn, _, err := w.(http.Hijacker).Hijack()
		if err == nil {
			conn.Close()
		}
		return
	}
	http.ServeContent(w, r, name, time.Time{}, bytes.NewReader(b))
}

// testSpec returns an IDX spec whose files are the given ones, with their checksums computed
// here by crypto/sha256.
func testSpec(files map[string][]byte) Spec {
	spec, _ := Lookup("mnist")
	spec.Files = nil
	for _, n := range []string{"train-images-idx3-ubyte.gz", "train-labels-idx1-ubyte.gz", "t10k-images-idx3-ubyte.gz", "t10k-labels-idx1-ubyte.gz"} {
		sum := sha256.Sum256(files[n])
		spec.Files = append(spec.Files, RemoteFile{Name: n, Size: int64(len(files[n])), SHA256: hex.EncodeToString(sum[:])})
	}
	return spec
}

func newMirror(t *testing.T, files map[string][]byte) (*mirror, *httptest.Server) {
	m := &mirror{files: files, cut: map[string]int{}}
	srv := httptest.NewServer(m)
	t.Cleanup(srv.Close)
	return m, srv
}

func assertNoPart(t *testing.T, dir string) {
	t.Helper()
	parts, _ := filepath.Glob(filepath.Join(dir, "*.part"))
	if len(parts) > 0 {
		t.Errorf("left %v behind", parts)
	}
}

func TestDownloadFetch(t *testing.T) {
	files := fakeIDXSet(t, 50, 20)
	spec := testSpec(files)
	_, srv := newMirror(t, files)
	dir := filepath.Join(t.TempDir(), "mnist")
	var progress bytes.Buffer
	dl := &Downloader{BaseURL: srv.URL, Progress: &progress}
	if err := dl.Fetch(t.Context(), spec, dir); err != nil {
		t.Fatal(err)
	}
	for name, want := range files {
		got, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil || !bytes.Equal(got, want) {
			t.Errorf("%s: %v, content equal = %v", name, err, bytes.Equal(got, want))
		}
	}
	assertNoPart(t, dir)
	if !strings.Contains(progress.String(), "100% [==============================]") || !strings.Contains(progress.String(), "done") {
		t.Errorf("progress output %q lacks a full bar", progress.String())
	}
	d, err := ReadIDXDir(dir, spec)
	if err != nil || d.Train.Len() != 50 || d.Test.Len() != 20 {
		t.Fatalf("reading the download: %v", err)
	}
}

func TestDownloadResumes(t *testing.T) {
	files := map[string][]byte{}
	for n, b := range fakeIDXSet(t, 2, 2) {
		files[n] = b
	}
	files["train-images-idx3-ubyte.gz"] = gzipBytes(t, idxBytes([]int{40, 28, 28}, noise(40*784)))
	spec := testSpec(files)
	big := files["train-images-idx3-ubyte.gz"]

	for _, c := range []struct {
		name        string
		ignoreRange bool
	}{{"range honoured", false}, {"range ignored", true}} {
		t.Run(c.name, func(t *testing.T) {
			m, srv := newMirror(t, files)
			m.ignoreRange = c.ignoreRange
			m.cut["train-images-idx3-ubyte.gz"] = len(big) / 3
			dir := t.TempDir()
			dl := &Downloader{BaseURL: srv.URL}
			err := dl.Fetch(t.Context(), spec, dir)
			if err == nil || !strings.Contains(err.Error(), "interrupted") || !strings.Contains(err.Error(), "run the same command again to resume") {
				t.Fatalf("first fetch error %v, want an interruption", err)
			}
			final := filepath.Join(dir, "train-images-idx3-ubyte.gz")
			if _, err := os.Stat(final); !errors.Is(err, os.ErrNotExist) {
				t.Fatalf("interrupted download left %s in place", final)
			}
			st, err := os.Stat(final + ".part")
			if err != nil || st.Size() != int64(len(big)/3) {
				t.Fatalf("partial file: %v (size %v), want %d bytes", err, st, len(big)/3)
			}
			if err := dl.Fetch(t.Context(), spec, dir); err != nil {
				t.Fatal(err)
			}
			got, _ := os.ReadFile(final)
			if !bytes.Equal(got, big) {
				t.Fatal("resumed file differs from the original")
			}
			assertNoPart(t, dir)
			wantRange := "bytes=" + strconv.Itoa(len(big)/3) + "-"
			found := false
			for _, r := range m.ranges {
				found = found || r == wantRange
			}
			if !found {
				t.Errorf("no request asked for %q; got %q", wantRange, m.ranges)
			}
		})
	}
}

func TestDownloadRejectsBadFiles(t *testing.T) {
	files := fakeIDXSet(t, 3, 3)
	spec := testSpec(files)
	spec.Files[1].SHA256 = strings.Repeat("0", 64) // the mirror serves a different labels file
	_, srv := newMirror(t, files)
	dir := t.TempDir()
	err := (&Downloader{BaseURL: srv.URL}).Fetch(t.Context(), spec, dir)
	var fe *FileError
	if !errors.As(err, &fe) || !strings.Contains(err.Error(), "checksum mismatch: want sha256 0000") || !strings.Contains(err.Error(), "train-labels-idx1-ubyte.gz") {
		t.Fatalf("error %v, want a checksum mismatch naming the file", err)
	}
	if _, err := os.Stat(filepath.Join(dir, "train-labels-idx1-ubyte.gz")); !errors.Is(err, os.ErrNotExist) {
		t.Error("a mismatching download was left where the good file is expected")
	}
	assertNoPart(t, dir)

	spec = testSpec(files)
	spec.Files = append(spec.Files, RemoteFile{Name: "missing.gz", Size: 10, SHA256: "00"})
	err = (&Downloader{BaseURL: srv.URL}).Fetch(t.Context(), spec, t.TempDir())
	if err == nil || !strings.Contains(err.Error(), "404") {
		t.Errorf("error %v, want a 404", err)
	}
}

func TestDownloadSkipsGoodAndReplacesBadFiles(t *testing.T) {
	files := fakeIDXSet(t, 3, 3)
	spec := testSpec(files)
	m, srv := newMirror(t, files)
	dir := t.TempDir()
	writeFiles(t, dir, files)
	bad := filepath.Join(dir, "t10k-labels-idx1-ubyte.gz")
	writeFile(t, bad, []byte("garbage"))
	if err := (&Downloader{BaseURL: srv.URL}).Fetch(t.Context(), spec, dir); err != nil {
		t.Fatal(err)
	}
	if m.hits != 1 {
		t.Errorf("%d requests, want 1 (only the bad file)", m.hits)
	}
	if got, _ := os.ReadFile(bad); !bytes.Equal(got, files["t10k-labels-idx1-ubyte.gz"]) {
		t.Error("the bad file was not replaced")
	}
}

func TestVerify(t *testing.T) {
	dir := t.TempDir()
	p := writeFile(t, filepath.Join(dir, "f"), []byte("abc"))
	// SHA-256("abc") from FIPS 180-2, appendix B.1.
	const abc = "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
	if err := Verify(p, RemoteFile{Name: "f", SHA256: abc}); err != nil {
		t.Error(err)
	}
	if err := Verify(p, RemoteFile{Name: "f", SHA256: "00", Also: []string{abc}}); err != nil {
		t.Errorf("alternative hash not accepted: %v", err)
	}
	if err := Verify(p, RemoteFile{Name: "f", SHA256: "00"}); err == nil || !strings.Contains(err.Error(), "want sha256 00 but the file has "+abc) {
		t.Errorf("error %v", err)
	}
}
