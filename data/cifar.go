package data

import (
	"archive/tar"
	"compress/gzip"
	"errors"
	"fmt"
	"io"
	"os"
	"path"
	"path/filepath"
	"strings"
)

// CIFAR-10's binary version (Krizhevsky 2009, https://www.cs.toronto.edu/~kriz/cifar.html)
// stores each example as 1 label byte followed by 3072 pixel bytes: the 1024 red values of the
// 32×32 image row by row, then green, then blue — channel-major (CHW) order, which is the
// layout Dataset uses. data_batch_1.bin … data_batch_5.bin hold the 50,000 training examples
// and test_batch.bin the 10,000 test examples, 10,000 per file; the archive
// cifar-10-binary.tar.gz holds them under cifar-10-batches-bin/.

const (
	cifarSide       = 32
	cifarChannels   = 3
	cifarPixels     = cifarChannels * cifarSide * cifarSide
	cifarRecord     = 1 + cifarPixels
	cifarClasses    = 10
	cifarTrainFiles = 5
	cifarArchive    = "cifar-10-binary.tar.gz"
	cifarFolder     = "cifar-10-batches-bin"
	cifarTestFile   = "test_batch.bin"
	cifarName       = "cifar10"
)

func cifarTrainFile(i int) string { return fmt.Sprintf("data_batch_%d.bin", i) }

// decodeCIFAR decodes the records of one CIFAR-10 batch file held in b; name is used in
// messages.
func decodeCIFAR(b []byte, name string) (x []float32, y []int32, err error) {
	if len(b) == 0 {
		return nil, nil, fileErrorf(name, cifarName, "empty: want records of %d bytes (1 label + 3072 pixels)", cifarRecord)
	}
	if r := len(b) % cifarRecord; r != 0 {
		return nil, nil, fileErrorf(name, cifarName, "truncated: %d bytes is not a whole number of %d-byte records (%d records and %d bytes over)", len(b), cifarRecord, len(b)/cifarRecord, r)
	}
	n := len(b) / cifarRecord
	y = make([]int32, n)
	pix := make([]byte, 0, n*cifarPixels)
	for i := range n {
		rec := b[i*cifarRecord : (i+1)*cifarRecord]
		if int(rec[0]) >= cifarClasses {
			return nil, nil, fileErrorf(name, cifarName, "label out of range: record %d has label %d, want 0..%d", i, rec[0], cifarClasses-1)
		}
		y[i] = int32(rec[0])
		pix = append(pix, rec[1:]...)
	}
	return scaleBytes(pix), y, nil
}

// cifarParts collects the decoded batch files of CIFAR-10 by file name.
type cifarParts map[string]*Split

// add decodes a batch file's bytes under its base name.
func (p cifarParts) add(base string, b []byte, where string) error {
	x, y, err := decodeCIFAR(b, where)
	if err != nil {
		return err
	}
	p[base] = &Split{X: x, Y: y, N: len(y), D: cifarPixels}
	return nil
}

// dataset assembles the splits; source is where the files were found, for messages and
// Dataset.Source.
func (p cifarParts) dataset(source string) (*Dataset, error) {
	var have, missing []string
	for i := 1; i <= cifarTrainFiles; i++ {
		if _, ok := p[cifarTrainFile(i)]; ok {
			have = append(have, cifarTrainFile(i))
		} else {
			missing = append(missing, cifarTrainFile(i))
		}
	}
	if len(have) > 0 && len(missing) > 0 {
		return nil, &FileError{Path: source, Problem: fmt.Sprintf("incomplete CIFAR-10 training set: found %s but not %s", strings.Join(have, ", "), strings.Join(missing, ", ")), Hint: redownloadHint(cifarName)}
	}
	d := &Dataset{Name: cifarName, Shape: []int{cifarChannels, cifarSide, cifarSide}, Classes: cifarClasses, Source: source, Preprocessing: []string{"scale-unit"}}
	if len(have) == cifarTrainFiles {
		train := &Split{D: cifarPixels}
		for i := 1; i <= cifarTrainFiles; i++ {
			s := p[cifarTrainFile(i)]
			train.X = append(train.X, s.X...)
			train.Y = append(train.Y, s.Y...)
			train.N += s.N
		}
		d.Train = train
	}
	d.Test = p[cifarTestFile]
	if d.Train == nil && d.Test == nil {
		return nil, &FileError{Path: source, Problem: fmt.Sprintf("no CIFAR-10 batch files: want %s … %s and/or %s", cifarTrainFile(1), cifarTrainFile(cifarTrainFiles), cifarTestFile), Hint: "download it (dptrain data download --dataset cifar10)"}
	}
	return d, nil
}

// isCIFARBatch reports whether base names one of the six CIFAR-10 batch files.
func isCIFARBatch(base string) bool {
	if base == cifarTestFile {
		return true
	}
	for i := 1; i <= cifarTrainFiles; i++ {
		if base == cifarTrainFile(i) {
			return true
		}
	}
	return false
}

// ReadCIFAR10Dir reads CIFAR-10's binary batch files from dir (the files themselves, as in
// the archive's cifar-10-batches-bin folder). A directory with only test_batch.bin gives a
// Dataset with a nil Train.
func ReadCIFAR10Dir(dir string) (*Dataset, error) {
	parts := cifarParts{}
	for _, base := range append(cifarBatchNames(), cifarTestFile) {
		p := filepath.Join(dir, base)
		b, err := os.ReadFile(p)
		if errors.Is(err, os.ErrNotExist) {
			continue
		}
		if err != nil {
			return nil, &FileError{Path: p, Problem: fmt.Sprintf("cannot read: %v", err)}
		}
		if err := parts.add(base, b, p); err != nil {
			return nil, err
		}
	}
	return parts.dataset(dir)
}

func cifarBatchNames() []string {
	names := make([]string, cifarTrainFiles)
	for i := range names {
		names[i] = cifarTrainFile(i + 1)
	}
	return names
}

// ReadCIFAR10Archive reads CIFAR-10 directly from the cifar-10-binary.tar.gz archive, without
// extracting it.
func ReadCIFAR10Archive(archive string) (*Dataset, error) {
	f, err := os.Open(archive)
	if err != nil {
		return nil, &FileError{Path: archive, Problem: fmt.Sprintf("cannot open: %v", err), Hint: redownloadHint(cifarName)}
	}
	defer f.Close()
	return readCIFAR10Archive(f, archive)
}

// readCIFAR10Archive is ReadCIFAR10Archive on an open stream; archive names it in messages.
func readCIFAR10Archive(r io.Reader, archive string) (*Dataset, error) {
	zr, err := gzip.NewReader(r)
	if err != nil {
		return nil, fileErrorf(archive, cifarName, "not a gzip archive: %v", err)
	}
	defer zr.Close()
	tr := tar.NewReader(zr)
	parts := cifarParts{}
	for {
		h, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, fileErrorf(archive, cifarName, "truncated or corrupt archive after %d batch files: %v", len(parts), err)
		}
		base := path.Base(h.Name)
		if h.Typeflag != tar.TypeReg || !isCIFARBatch(base) {
			continue
		}
		if h.Size > 2*10000*cifarRecord {
			return nil, fileErrorf(archive, cifarName, "member %s announces %d bytes, more than a CIFAR-10 batch file holds", h.Name, h.Size)
		}
		b, err := readAtMost(tr, h.Size)
		if int64(len(b)) != h.Size {
			return nil, fileErrorf(archive, cifarName, "truncated: member %s announces %d bytes but only %d follow (%v)", h.Name, h.Size, len(b), err)
		}
		if err := parts.add(base, b, archive+":"+h.Name); err != nil {
			return nil, err
		}
	}
	// Read to the end so that gzip verifies its checksum.
	if _, err := io.Copy(io.Discard, zr); err != nil {
		return nil, fileErrorf(archive, cifarName, "corrupt archive: %v", err)
	}
	return parts.dataset(archive)
}
