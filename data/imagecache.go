package data

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
)

// Decoding an archive of tens of thousands of JPEG files takes seconds; the decoded bytes are
// cached in the data directory, next to a dataset's other files, keyed by the SHA-256 of the
// archive and the class list, and checked on every load: the archive's SHA-256 against the one
// the cache records, and the cache's own CRC-32C. A cache that does not match is decoded again
// and overwritten. Folders of image files are not cached: nothing cheap identifies their
// contents.

const imageCacheMagic = "dptrain-decoded-images-2\n"

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// imageCacheHeader describes a cache file's contents.
type imageCacheHeader struct {
	ArchiveSHA256 string   `json:"archive_sha256"`
	Declared      []string `json:"declared"` // the classes asked for; empty for sorted folders
	Classes       []string `json:"classes"`
	Shape         [3]int   `json:"shape"`
	Has           [2]bool  `json:"has"`
	N             [2]int   `json:"n"`
}

// imageCachePath returns the cache file of the archive whose SHA-256 is sum, decoded with
// classes, in dir.
func imageCachePath(dir, sum string, classes []string) string {
	key := crc32.Checksum([]byte(strings.Join(classes, "\n")), castagnoli)
	return filepath.Join(dir, fmt.Sprintf("decoded-%s-%08x.bin", sum[:16], key))
}

// writeImageCache writes set, decoded from the archive whose SHA-256 is sum, to path.
func writeImageCache(path, sum string, declared []string, set *imageSet) error {
	h := imageCacheHeader{ArchiveSHA256: sum, Declared: declared, Classes: set.classes, Shape: set.shape, Has: set.has}
	for k := range h.N {
		h.N[k] = len(set.y[k])
	}
	head, err := json.Marshal(h)
	if err != nil {
		return err
	}
	return WriteFileAtomic(path, func(w io.Writer) error {
		crc := crc32.New(castagnoli)
		mw := io.MultiWriter(w, crc)
		io.WriteString(mw, imageCacheMagic)
		binary.Write(mw, binary.LittleEndian, uint32(len(head)))
		mw.Write(head)
		for k := range set.y {
			binary.Write(mw, binary.LittleEndian, set.y[k])
			mw.Write(set.pix[k])
		}
		return binary.Write(w, binary.LittleEndian, crc.Sum32())
	})
}

// readImageCache reads the cache file at path, checking that it is whole and that it was
// decoded from the archive whose SHA-256 is sum with the declared classes.
func readImageCache(path, sum string, declared []string) (*imageSet, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	if len(b) < len(imageCacheMagic)+8 || !bytes.HasPrefix(b, []byte(imageCacheMagic)) {
		return nil, errors.New("not a cache of decoded images")
	}
	body, tail := b[:len(b)-4], b[len(b)-4:]
	if crc32.Checksum(body, castagnoli) != binary.LittleEndian.Uint32(tail) {
		return nil, errors.New("CRC-32C mismatch: the cache file is damaged")
	}
	rest := body[len(imageCacheMagic):]
	n := int(binary.LittleEndian.Uint32(rest))
	if n > len(rest)-4 {
		return nil, errors.New("truncated header")
	}
	var h imageCacheHeader
	if err := json.Unmarshal(rest[4:4+n], &h); err != nil {
		return nil, fmt.Errorf("bad header: %v", err)
	}
	if h.ArchiveSHA256 != sum || !slices.Equal(h.Declared, declared) {
		return nil, errors.New("decoded from another archive or class list")
	}
	rest = rest[4+n:]
	set := &imageSet{shape: h.Shape, classes: h.Classes, has: h.Has}
	dim := h.Shape[0] * h.Shape[1] * h.Shape[2]
	for k := range set.y {
		if h.N[k] < 0 || dim <= 0 || len(rest) < h.N[k]*(4+dim) {
			return nil, errors.New("truncated body")
		}
		set.y[k] = make([]int32, h.N[k])
		binary.Decode(rest[:4*h.N[k]], binary.LittleEndian, set.y[k])
		rest = rest[4*h.N[k]:]
		set.pix[k], rest = rest[:h.N[k]*dim], rest[h.N[k]*dim:]
		for _, y := range set.y[k] {
			if y < 0 || int(y) >= len(h.Classes) {
				return nil, fmt.Errorf("label %d out of range", y)
			}
		}
	}
	if len(rest) != 0 {
		return nil, errors.New("trailing bytes")
	}
	return set, nil
}

// readImageArchiveCached reads the image-folder archive through the cache in dir ("" for no
// cache). want, when not empty, is the archive's published SHA-256: another archive is
// refused. It reports whether the cache was used; a cache that cannot be written is not an
// error (the images were decoded), and is returned as cacheErr.
func readImageArchiveCached(archive, dir, want string, classes []string) (set *imageSet, hit bool, cacheErr, err error) {
	sum, err := fileSHA256(archive)
	if err != nil {
		return nil, false, nil, &FileError{Path: archive, Problem: fmt.Sprintf("cannot read: %v", err)}
	}
	if want != "" && sum != want {
		return nil, false, nil, &FileError{Path: archive, Problem: fmt.Sprintf("checksum mismatch: want sha256 %s but the file has %s", want, sum), Hint: "it is not the published archive: replace it with a good copy"}
	}
	var p string
	if dir != "" {
		p = imageCachePath(dir, sum, classes)
		if set, err := readImageCache(p, sum, classes); err == nil {
			return set, true, nil, nil
		}
	}
	set, err = readImageSet(archive, classes)
	if err != nil {
		return nil, false, nil, err
	}
	if p != "" {
		if err := writeImageCache(p, sum, classes, set); err != nil {
			cacheErr = fmt.Errorf("data: decoded images of %s not cached: %w", archive, err)
		}
	}
	return set, false, cacheErr, nil
}
