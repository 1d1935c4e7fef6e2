package data

import (
	"errors"
	"path/filepath"
	"strings"
	"testing"
)

func TestReadIDXSplitRoundTrip(t *testing.T) {
	// Three 2×3 images with hand-picked bytes; the expected floats are byte/255 written out.
	pix := []byte{0, 51, 102, 153, 204, 255, 255, 0, 0, 0, 0, 1, 10, 20, 30, 40, 50, 60}
	labels := []byte{3, 0, 9}
	for _, compress := range []bool{false, true} {
		dir := t.TempDir()
		img, lab := idxBytes([]int{3, 2, 3}, pix), idxBytes([]int{3}, labels)
		if compress {
			img, lab = gzipBytes(t, img), gzipBytes(t, lab)
		}
		ip := writeFile(t, filepath.Join(dir, "img"), img)
		lp := writeFile(t, filepath.Join(dir, "lab"), lab)
		s, err := readIDXSplit(ip, lp, "test", 2, 3, 10)
		if err != nil {
			t.Fatalf("compress=%v: %v", compress, err)
		}
		if s.N != 3 || s.D != 6 {
			t.Fatalf("compress=%v: N, D = %d, %d, want 3, 6", compress, s.N, s.D)
		}
		want := []float32{0, 0.2, 0.4, 0.6, 0.8, 1, 1, 0, 0, 0, 0, 1.0 / 255}
		for i, w := range want {
			if d := s.X[i] - w; d > 1e-7 || d < -1e-7 {
				t.Errorf("compress=%v: X[%d] = %v, want %v", compress, i, s.X[i], w)
			}
		}
		if s.X[17] != float32(60)/255 {
			t.Errorf("X[17] = %v, want 60/255", s.X[17])
		}
		for i, l := range labels {
			if s.Y[i] != int32(l) {
				t.Errorf("Y[%d] = %d, want %d", i, s.Y[i], l)
			}
		}
	}
}

func TestReadIDXErrors(t *testing.T) {
	goodPix := make([]byte, 3*28*28)
	goodImg := idxBytes([]int{3, 28, 28}, goodPix)
	goodLab := idxBytes([]int{3}, []byte{1, 2, 3})
	corrupt := gzipBytes(t, goodImg)
	corrupt[len(corrupt)-6] ^= 0xff // inside the CRC-32 trailer
	cases := []struct {
		name     string
		img, lab []byte
		bad      string // "img" or "lab": which file the error must name
		want     string
	}{
		{"truncated images raw", idxBytes([]int{3, 28, 28}, goodPix[:100]), goodLab, "img",
			"truncated: header says 3 images of 28×28 (2352 bytes) but only 100 bytes follow; re-download it (dptrain data download --dataset mnist)"},
		{"truncated images gzip", gzipBytes(t, idxBytes([]int{3, 28, 28}, goodPix[:1234])), goodLab, "img",
			"truncated: header says 3 images of 28×28 (2352 bytes) but only 1234 bytes follow"},
		{"truncated gzip trailer", gzipBytes(t, goodImg)[:40], goodLab, "img", "truncated: the gzip stream ends before its checksum trailer"},
		{"truncated gzip stream", gzipBytes(t, idxBytes([]int{3, 28, 28}, noise(3*28*28)))[:1000], goodLab, "img", "truncated: header says 3 images of 28×28 (2352 bytes) but only "},
		{"truncated header", []byte{0, 0, 8, 3, 0, 0}, goodLab, "img", "truncated: the IDX header needs 12 dimension bytes but only 2 follow"},
		{"empty file", nil, goodLab, "img", "truncated: want a 4-byte IDX magic number but the file holds 0 bytes"},
		{"corrupt gzip", corrupt, goodLab, "img", "corrupt gzip data"},
		{"wrong magic: labels as images", goodLab, goodLab, "img", "wrong magic number: want 0x00000803 (IDX images: unsigned bytes in 3 dimensions) but found 0x00000801"},
		{"wrong magic: not idx", []byte("PK\x03\x04 a zip file, not IDX"), goodLab, "img", "wrong magic number"},
		{"extra bytes", append(append([]byte{}, goodImg...), 1, 2, 3), goodLab, "img", "but 3 more bytes follow them"},
		{"dims mismatch", idxBytes([]int{3, 32, 32}, make([]byte, 3*32*32)), goodLab, "img", "dimensions mismatch: mnist images are 28×28 but the file holds 32×32 images"},
		{"count mismatch", goodImg, idxBytes([]int{4}, []byte{1, 2, 3, 4}), "lab", "count mismatch: "},
		{"label out of range", goodImg, idxBytes([]int{3}, []byte{1, 10, 3}), "lab", "label out of range: example 1 has label 10, want 0..9"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			ip := writeFile(t, filepath.Join(dir, "train-images-idx3-ubyte.gz"), c.img)
			lp := writeFile(t, filepath.Join(dir, "train-labels-idx1-ubyte.gz"), c.lab)
			_, err := readIDXSplit(ip, lp, "mnist", 28, 28, 10)
			if err == nil {
				t.Fatal("read succeeded, want an error")
			}
			var fe *FileError
			if !errors.As(err, &fe) {
				t.Fatalf("error %v is %T, want *FileError", err, err)
			}
			path := ip
			if c.bad == "lab" {
				path = lp
			}
			if fe.Path != path {
				t.Errorf("error names %s, want %s", fe.Path, path)
			}
			if !strings.HasPrefix(err.Error(), "data: "+path+": ") || !strings.Contains(err.Error(), c.want) {
				t.Errorf("error\n  %v\nwant it to start with data: %s: and contain\n  %s", err, path, c.want)
			}
			if strings.Contains(err.Error(), "\n") {
				t.Errorf("error spans several lines: %q", err)
			}
		})
	}
}

func TestReadIDXDirSplits(t *testing.T) {
	spec, err := Lookup("mnist")
	if err != nil {
		t.Fatal(err)
	}
	files := fakeIDXSet(t, 7, 4)

	t.Run("both splits", func(t *testing.T) {
		dir := t.TempDir()
		writeFiles(t, dir, files)
		d, err := ReadIDXDir(dir, spec)
		if err != nil {
			t.Fatal(err)
		}
		if d.Train.Len() != 7 || d.Test.Len() != 4 {
			t.Fatalf("train/test = %d/%d, want 7/4", d.Train.Len(), d.Test.Len())
		}
		// Example 5, pixel 300: byte (5+300) mod 256 = 49; label 5.
		if got, want := d.Train.Row(5)[300], float32(49)/255; got != want {
			t.Errorf("train[5][300] = %v, want %v", got, want)
		}
		if d.Train.Y[5] != 5 || d.Test.Y[3] != 3 {
			t.Errorf("labels %d, %d, want 5, 3", d.Train.Y[5], d.Test.Y[3])
		}
	})
	t.Run("test only, raw files", func(t *testing.T) {
		dir := t.TempDir()
		for _, n := range []string{"t10k-images-idx3-ubyte", "t10k-labels-idx1-ubyte"} {
			raw, err := gunzip(files[n+".gz"])
			if err != nil {
				t.Fatal(err)
			}
			writeFile(t, filepath.Join(dir, n), raw)
		}
		d, err := ReadIDXDir(dir, spec)
		if err != nil {
			t.Fatal(err)
		}
		if d.Train != nil || d.Test.Len() != 4 {
			t.Fatalf("train=%v test=%d, want nil and 4", d.Train, d.Test.Len())
		}
	})
	t.Run("labels missing", func(t *testing.T) {
		dir := t.TempDir()
		writeFile(t, filepath.Join(dir, "train-images-idx3-ubyte.gz"), files["train-images-idx3-ubyte.gz"])
		_, err := ReadIDXDir(dir, spec)
		if err == nil || !strings.Contains(err.Error(), "found train-images-idx3-ubyte.gz but not its labels train-labels-idx1-ubyte.gz") {
			t.Fatalf("error %v, want one about the missing labels", err)
		}
	})
	t.Run("empty dir", func(t *testing.T) {
		dir := t.TempDir()
		_, err := ReadIDXDir(dir, spec)
		if err == nil || !strings.Contains(err.Error(), "no mnist files") {
			t.Fatalf("error %v, want 'no mnist files'", err)
		}
	})
}
