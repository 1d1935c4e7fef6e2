package data

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"errors"
	"maps"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// cifarBatch encodes n CIFAR-10 records: record i has label (i+first) mod 10 and pixel byte
// j = (i + first + 3j) mod 256, where j runs over the 3072 bytes in file (CHW) order.
func cifarBatch(first, n int) []byte {
	b := make([]byte, 0, n*cifarRecord)
	for i := first; i < first+n; i++ {
		b = append(b, byte(i%10))
		for j := range cifarPixels {
			b = append(b, byte((i+3*j)%256))
		}
	}
	return b
}

// cifarFiles returns the six batch files of a tiny CIFAR-10: perBatch records each, numbered
// consecutively through data_batch_1..5 and then test_batch.
func cifarFiles(perBatch int) map[string][]byte {
	files := map[string][]byte{}
	for i := 1; i <= 5; i++ {
		files[cifarTrainFile(i)] = cifarBatch((i-1)*perBatch, perBatch)
	}
	files[cifarTestFile] = cifarBatch(5*perBatch, perBatch)
	return files
}

// tarGz packs files, and the extra members, under cifar-10-batches-bin/ in a .tar.gz.
func tarGz(t testing.TB, files map[string][]byte, extra map[string]string) []byte {
	t.Helper()
	all := maps.Clone(files)
	for n, s := range extra {
		all[n] = []byte(s)
	}
	return packTarGz(t, cifarFolder, all)
}

// packTarGz packs files (slash-separated names) in sorted order into a .tar.gz, under the
// folder prefix (with its own entry) unless prefix is empty.
func packTarGz(t testing.TB, prefix string, files map[string][]byte) []byte {
	t.Helper()
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	tw := tar.NewWriter(zw)
	if prefix != "" {
		tw.WriteHeader(&tar.Header{Name: prefix + "/", Typeflag: tar.TypeDir, Mode: 0o755})
		prefix += "/"
	}
	for _, n := range slices.Sorted(maps.Keys(files)) {
		if err := tw.WriteHeader(&tar.Header{Name: prefix + n, Mode: 0o644, Size: int64(len(files[n])), Typeflag: tar.TypeReg}); err != nil {
			t.Fatal(err)
		}
		tw.Write(files[n])
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

func checkTinyCIFAR(t *testing.T, d *Dataset, perBatch int) {
	t.Helper()
	if d.Train.Len() != 5*perBatch || d.Test.Len() != perBatch {
		t.Fatalf("train/test = %d/%d, want %d/%d", d.Train.Len(), d.Test.Len(), 5*perBatch, perBatch)
	}
	if !slices.Equal(d.Shape, []int{3, 32, 32}) || d.Train.D != 3072 || d.Classes != 10 {
		t.Fatalf("shape %v D %d classes %d, want [3 32 32], 3072, 10", d.Shape, d.Train.D, d.Classes)
	}
	// Example i, channel c, row r, column k is file byte j = c·1024 + r·32 + k of record i.
	for _, p := range []struct {
		split              *Split
		i, global, c, r, k int
	}{
		{d.Train, 0, 0, 0, 0, 0},
		{d.Train, 7, 7, 1, 5, 9},
		{d.Train, 5*perBatch - 1, 5*perBatch - 1, 2, 31, 31},
		{d.Test, 2, 5*perBatch + 2, 2, 10, 3},
	} {
		j := p.c*1024 + p.r*32 + p.k
		want := float32((p.global+3*j)%256) / 255
		if got := p.split.Row(p.i)[j]; got != want {
			t.Errorf("example %d channel %d (%d,%d) = %v, want %v", p.i, p.c, p.r, p.k, got, want)
		}
		if got := p.split.Y[p.i]; got != int32(p.global%10) {
			t.Errorf("label of example %d = %d, want %d", p.i, got, p.global%10)
		}
	}
}

func TestCIFAR10DirAndArchive(t *testing.T) {
	const per = 12
	files := cifarFiles(per)

	dir := t.TempDir()
	writeFiles(t, filepath.Join(dir, cifarFolder), files)
	l := &Locator{Dir: dir}
	d, err := l.Load(t.Context(), "cifar10")
	if err != nil {
		t.Fatal(err)
	}
	checkTinyCIFAR(t, d, per)
	if want := filepath.Join(dir, cifarFolder) + " (dir)"; d.Source != want {
		t.Errorf("source %q, want %q", d.Source, want)
	}

	adir := t.TempDir()
	writeFile(t, filepath.Join(adir, cifarArchive), tarGz(t, files, map[string]string{"batches.meta.txt": "airplane\nautomobile\n", "readme.html": "<html/>"}))
	d2, err := (&Locator{Dir: adir}).Load(t.Context(), "cifar-10")
	if err != nil {
		t.Fatal(err)
	}
	checkTinyCIFAR(t, d2, per)
	if !slices.Equal(d.Train.X, d2.Train.X) || !slices.Equal(d.Test.Y, d2.Test.Y) {
		t.Error("archive and directory give different data")
	}
}

func TestCIFAR10Errors(t *testing.T) {
	badLabel := cifarBatch(0, 3)
	badLabel[cifarRecord] = 10 // record 1's label
	archive := tarGz(t, cifarFiles(3), nil)
	cases := []struct {
		name   string
		mutate func(map[string][]byte)
		asTar  bool
		tarCut int
		want   string
	}{
		{name: "truncated batch", mutate: func(m map[string][]byte) { m[cifarTrainFile(2)] = m[cifarTrainFile(2)][:2*cifarRecord+100] },
			want: "data_batch_2.bin: truncated: 6246 bytes is not a whole number of 3073-byte records (2 records and 100 bytes over)"},
		{name: "label out of range", mutate: func(m map[string][]byte) { m[cifarTestFile] = badLabel },
			want: "test_batch.bin: label out of range: record 1 has label 10, want 0..9"},
		{name: "missing train batch", mutate: func(m map[string][]byte) { delete(m, cifarTrainFile(4)) },
			want: "incomplete CIFAR-10 training set: found data_batch_1.bin, data_batch_2.bin, data_batch_3.bin, data_batch_5.bin but not data_batch_4.bin"},
		{name: "empty batch", mutate: func(m map[string][]byte) { m[cifarTrainFile(1)] = nil },
			want: "data_batch_1.bin: empty"},
		{name: "truncated archive", asTar: true, tarCut: len(archive) / 2, want: "truncated"},
		{name: "label out of range in archive", asTar: true, mutate: func(m map[string][]byte) { m[cifarTestFile] = badLabel },
			want: "cifar-10-binary.tar.gz:cifar-10-batches-bin/test_batch.bin: label out of range"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			m := cifarFiles(3)
			if c.mutate != nil {
				c.mutate(m)
			}
			dir := t.TempDir()
			var err error
			if c.asTar {
				b := tarGz(t, m, nil)
				if c.tarCut > 0 {
					b = b[:c.tarCut]
				}
				_, err = ReadCIFAR10Archive(writeFile(t, filepath.Join(dir, cifarArchive), b))
			} else {
				writeFiles(t, dir, m)
				_, err = ReadCIFAR10Dir(dir)
			}
			var fe *FileError
			if !errors.As(err, &fe) {
				t.Fatalf("error %v, want a *FileError", err)
			}
			if !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), dir) {
				t.Errorf("error\n  %v\nwant it to name %s and contain\n  %s", err, dir, c.want)
			}
		})
	}
}

func TestCIFAR10TestOnly(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, cifarTestFile), cifarBatch(0, 4))
	d, err := ReadCIFAR10Dir(dir)
	if err != nil {
		t.Fatal(err)
	}
	if d.Train != nil || d.Test.Len() != 4 {
		t.Fatalf("train %v test %d, want nil and 4", d.Train, d.Test.Len())
	}
}
