package main

import (
	"bytes"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// runDptrain runs the command line with args and returns what it printed and its error.
func runDptrain(t *testing.T, args ...string) (stdout, stderr string, err error) {
	t.Helper()
	return runDptrainAs(t, "", args...)
}

// runDptrainAs is runDptrain with the program started as prog ("": unknown, as in tests).
func runDptrainAs(t *testing.T, prog string, args ...string) (stdout, stderr string, err error) {
	t.Helper()
	var out, errw bytes.Buffer
	root := newRootCmd()
	if prog != "" {
		root.Annotations = map[string]string{invokedKey: prog}
	}
	root.SetOut(&out)
	root.SetErr(&errw)
	root.SetArgs(args)
	err = root.Execute()
	return out.String(), errw.String(), err
}

type inspectJSON struct {
	Dataset string `json:"dataset"`
	Train   int    `json:"train"`
	Test    int    `json:"test"`
	Shape   []int  `json:"shape"`
	Classes int    `json:"classes"`
	Source  string `json:"source"`
}

func decodeInspect(t *testing.T, out string) inspectJSON {
	t.Helper()
	if strings.Count(strings.TrimSpace(out), "\n") != 0 {
		t.Fatalf("--json printed several lines:\n%s", out)
	}
	var r inspectJSON
	if err := json.Unmarshal([]byte(out), &r); err != nil {
		t.Fatalf("--json output %q is not one JSON object: %v", out, err)
	}
	return r
}

func TestDataInspectFashionMNIST(t *testing.T) {
	const dir = "/usr/share/datasets/fashion-mnist"
	if _, err := os.Stat(dir); err != nil {
		t.Skip("Fashion-MNIST not found at " + dir + " (install Debian's dataset-fashion-mnist)")
	}
	t.Setenv("DPTRAIN_DATA", t.TempDir()) // an empty cache, so the system copy is found
	out, _, err := runDptrain(t, "data", "inspect", "--dataset", "fashion-mnist", "--json")
	if err != nil {
		t.Fatal(err)
	}
	r := decodeInspect(t, out)
	if r.Dataset != "fashion-mnist" || r.Train != 60000 || r.Test != 10000 || !slices.Equal(r.Shape, []int{1, 28, 28}) || r.Classes != 10 {
		t.Errorf("inspect reported %+v, want fashion-mnist 60000/10000 of [1 28 28], 10 classes", r)
	}
	if r.Source != dir+" (system)" {
		t.Errorf("source %q, want %s (system)", r.Source, dir)
	}
}

func TestDataInspectMNISTTestOnly(t *testing.T) {
	root := os.Getenv("DPTRAIN_SHARED")
	if root == "" {
		root = filepath.Join("..", "..", "..", "shared")
	}
	dir := filepath.Join(root, "data", "mnist-t10k")
	if _, err := os.Stat(dir); err != nil {
		t.Skip("MNIST test set not found at " + dir)
	}
	out, _, err := runDptrain(t, "data", "inspect", "--dataset", "mnist", "--dir", dir, "--json")
	if err != nil {
		t.Fatal(err)
	}
	r := decodeInspect(t, out)
	if r.Train != 0 || r.Test != 10000 || r.Source != dir+" (dir)" {
		t.Errorf("inspect reported %+v, want 0/10000 from %s (dir)", r, dir)
	}
	text, _, err := runDptrain(t, "data", "inspect", "--dataset", "mnist", "--dir", dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"train:    0 examples (none in this source)", "test:     10000 examples", "test per class:  980 1135 1032 1010 982 892 958 1028 974 1009"} {
		if !strings.Contains(text, want) {
			t.Errorf("text output lacks %q:\n%s", want, text)
		}
	}
}

func TestDataInspectTruncatedFile(t *testing.T) {
	dir := t.TempDir()
	// An IDX header announcing 10 images of 28×28, followed by 5 bytes only.
	head := []byte{0, 0, 8, 3, 0, 0, 0, 10, 0, 0, 0, 28, 0, 0, 0, 28, 1, 2, 3, 4, 5}
	img := filepath.Join(dir, "t10k-images-idx3-ubyte")
	os.WriteFile(img, head, 0o644)
	os.WriteFile(filepath.Join(dir, "t10k-labels-idx1-ubyte"), []byte{0, 0, 8, 1, 0, 0, 0, 10, 0, 1, 2, 3, 4, 5, 6, 7, 8, 9}, 0o644)
	out, _, err := runDptrain(t, "data", "inspect", "--dataset", "mnist", "--dir", dir, "--json")
	if err == nil {
		t.Fatalf("inspect of a truncated file succeeded, printing %q", out)
	}
	want := "data: " + img + ": truncated: header says 10 images of 28×28 (7840 bytes) but only 5 bytes follow; re-download it (dptrain data download --dataset mnist)"
	if err.Error() != want {
		t.Errorf("error\n  %v\nwant\n  %s", err, want)
	}
	if out != "" {
		t.Errorf("printed %q before failing", out)
	}
}

func TestDataList(t *testing.T) {
	t.Setenv("DPTRAIN_DATA", t.TempDir())
	out, _, err := runDptrain(t, "data", "list")
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"mnist ", "fashion-mnist ", "cifar10 ", "synthetic-mixture ", "[3,32,32]", "not found (dptrain data download --dataset cifar10)",
		"not found (copy cifar10-jpeg.tar.gz into the data directory's cifar10-jpeg/ folder, or set data.path)",
		"cifar10-jpeg: CIFAR-10 (JPEG q75 copy): pixels differ from the canonical binary files; report numbers as such",
		"image-folder ", "your own images"} {
		if !strings.Contains(out, want) {
			t.Errorf("list lacks %q:\n%s", want, out)
		}
	}
	js, _, err := runDptrain(t, "data", "list", "--json")
	if err != nil {
		t.Fatal(err)
	}
	var rows []struct {
		Dataset string `json:"dataset"`
		Found   bool   `json:"found"`
	}
	if err := json.Unmarshal([]byte(js), &rows); err != nil || len(rows) != 8 {
		t.Fatalf("list --json: %v, %d rows", err, len(rows))
	}
}

func TestDataDownloadRejectsWrongFiles(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Write([]byte("not the MNIST file"))
	}))
	defer srv.Close()
	dir := t.TempDir()
	_, _, err := runDptrain(t, "data", "download", "--dataset", "mnist", "--dir", dir, "--base-url", srv.URL)
	if err == nil || !strings.Contains(err.Error(), "size mismatch: want 9912422 bytes but the download has 18") {
		t.Fatalf("error %v, want a size mismatch", err)
	}
	if left, _ := filepath.Glob(filepath.Join(dir, "*")); len(left) != 0 {
		t.Errorf("failed download left %v", left)
	}
	if _, _, err := runDptrain(t, "data", "download", "--dataset", "synthetic-mixture", "--dir", dir); err == nil {
		t.Error("downloading a synthetic set succeeded")
	}
}
