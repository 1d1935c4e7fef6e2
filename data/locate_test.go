package data

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestLocatorSearchOrder(t *testing.T) {
	cache, system := t.TempDir(), t.TempDir()
	writeFiles(t, filepath.Join(system, "mnist"), fakeIDXSet(t, 5, 5))
	l := &Locator{CacheDir: cache, SystemRoots: []string{system}}

	loc, err := l.Find("mnist")
	if err != nil {
		t.Fatal(err)
	}
	if loc.Source != SourceSystem || loc.Path != filepath.Join(system, "mnist") {
		t.Errorf("found %v, want the system copy", loc)
	}
	// A copy in the cache takes precedence.
	writeFiles(t, filepath.Join(cache, "mnist"), fakeIDXSet(t, 3, 2))
	d, err := l.Load(t.Context(), "MNIST")
	if err != nil {
		t.Fatal(err)
	}
	if d.Source != filepath.Join(cache, "mnist")+" (cache)" || d.Train.Len() != 3 {
		t.Errorf("loaded %s with %d training examples, want the cache copy with 3", d.Source, d.Train.Len())
	}
	// An explicit directory is the only place searched.
	empty := t.TempDir()
	_, err = (&Locator{Dir: empty, CacheDir: cache, SystemRoots: []string{system}}).Load(t.Context(), "mnist")
	if !errors.Is(err, os.ErrNotExist) || !strings.Contains(err.Error(), "mnist not found in "+empty) || !strings.Contains(err.Error(), "--dir "+empty) {
		t.Errorf("error %v, want not found in %s", err, empty)
	}
	// Nothing anywhere: the error lists the places searched.
	_, err = (&Locator{CacheDir: cache, SystemRoots: []string{system}}).Find("fashion-mnist")
	if !errors.Is(err, os.ErrNotExist) || !strings.Contains(err.Error(), filepath.Join(cache, "fashion-mnist")+", "+filepath.Join(system, "fashion-mnist")) {
		t.Errorf("error %v, want both places listed", err)
	}
	if _, err := l.Find("imagenet"); err == nil || !strings.Contains(err.Error(), "unknown dataset \"imagenet\"") {
		t.Errorf("error %v, want unknown dataset", err)
	}
}

func TestLocatorDownloadsIntoCache(t *testing.T) {
	files := fakeIDXSet(t, 4, 3)
	spec := testSpec(files)
	_, srv := newMirror(t, files)
	cache := t.TempDir()
	// The registry's checksums are the real files'; fetch with the test spec's instead.
	l := &Locator{CacheDir: cache, SystemRoots: []string{}, Download: true, Downloader: &Downloader{BaseURL: srv.URL}}
	loc, err := l.fetch(t.Context(), spec)
	if err != nil {
		t.Fatal(err)
	}
	if loc.Source != SourceDownload || loc.Path != filepath.Join(cache, "mnist") {
		t.Errorf("download location %v", loc)
	}
	d, err := l.Load(t.Context(), "mnist") // now in the cache
	if err != nil {
		t.Fatal(err)
	}
	if d.Source != filepath.Join(cache, "mnist")+" (cache)" || d.Train.Len() != 4 || d.Test.Len() != 3 {
		t.Errorf("loaded %s %d/%d", d.Source, d.Train.Len(), d.Test.Len())
	}
	// With the real registry checksums, the test mirror's files are rejected and nothing is
	// left in the cache.
	l2 := &Locator{CacheDir: t.TempDir(), SystemRoots: []string{}, Download: true, Downloader: &Downloader{BaseURL: srv.URL}}
	if _, err := l2.Load(t.Context(), "mnist"); err == nil || !strings.Contains(err.Error(), "mismatch") {
		t.Errorf("error %v, want a size or checksum mismatch", err)
	}
	if files, _ := filepath.Glob(filepath.Join(l2.CacheDir, "mnist", "*")); len(files) != 0 {
		t.Errorf("rejected download left %v", files)
	}
}

func TestLocatorSynthetic(t *testing.T) {
	l := &Locator{Seed: 11, SystemRoots: []string{}}
	d, err := l.Load(t.Context(), SyntheticMixture)
	if err != nil {
		t.Fatal(err)
	}
	want, _ := Synthetic(SyntheticMixture, 11)
	if d.Source != "generated: synthetic-mixture seed=11" || d.Train.X[0] != want.Train.X[0] {
		t.Errorf("source %q", d.Source)
	}
}

func TestDefaultCacheDir(t *testing.T) {
	t.Setenv(CacheEnv, "/x/y")
	if d, err := DefaultCacheDir(); err != nil || d != "/x/y" {
		t.Errorf("with %s set: %q, %v", CacheEnv, d, err)
	}
	t.Setenv(CacheEnv, "")
	d, err := DefaultCacheDir()
	if err == nil && filepath.Base(d) != "dptrain" {
		t.Errorf("default cache %q, want …/dptrain", d)
	}
}
