package data

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"fmt"
	"image"
	"image/color"
	"image/jpeg"
	"image/png"
	"io"
	"io/fs"
	"maps"
	"os"
	"path"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
)

// An image-folder dataset is a directory, or a .tar.gz archive of one, laid out as
// <split>/<class>/<image>: the splits are train and test (either may be absent), each class a
// folder of JPEG or PNG files, and a class's label its index in a declared list of classes or,
// without one, in the sorted class folders. Every image is decoded once into the layout the
// CIFAR-10 reader uses: channel-major (CHW) rows of float32 values byte/255 in [0, 1], three
// channels (red, green, blue) or one when every image is grayscale. Within a split, the
// classes take turns: the first file (in sorted name order) of every class in label order,
// then the second of every class, and so on, so that a prefix of the split
// (data.train_subset) holds every class.

// ImageFolderName is the registry name of a user's own image-folder dataset.
const ImageFolderName = "image-folder"

// maxImageBytes bounds the size of one image file read from an archive.
const maxImageBytes = 64 << 20

var imageSplits = []string{"train", "test"}

// imageFile is one image of an image folder before decoding.
type imageFile struct {
	split int    // index in imageSplits
	class string // its class folder
	rel   string // its path inside the folder, for sorting
	rank  int    // its place among its class's files in the split, in name order
	where string // its path for messages: a file, or ARCHIVE:MEMBER
	data  []byte // its bytes when it came from an archive; nil for a file read at decode time
	label int32
}

// decodedImage is one image in CHW bytes.
type decodedImage struct {
	pix       []byte
	c, h, w   int
	grayscale bool
	decodeErr error
}

// ReadImageFolder reads the image-folder dataset at path, a directory or a .tar.gz archive
// holding <split>/<class>/<image> (or a single folder holding that), with the splits train
// and/or test and JPEG or PNG images. Classes, when not empty, lists the class folders in label
// order; otherwise the class folders found, sorted, are the classes. It refuses, naming the
// file, an image that does not decode or whose size differs from the others, a class folder
// that is in one split but not in the other, a class folder not in Classes and a file that is
// not a .jpg, .jpeg or .png; hidden files (names starting with a dot) are passed over. Images
// are decoded in parallel on every core; the result does not depend on their number.
func ReadImageFolder(path string, classes []string) (*Dataset, error) {
	return readImageFolder(path, ImageFolderName, classes)
}

func readImageFolder(root, name string, classes []string) (*Dataset, error) {
	set, err := readImageSet(root, classes)
	if err != nil {
		return nil, err
	}
	return set.dataset(name, root), nil
}

// imageSet is an image folder decoded to bytes (CHW, per split in file order), as the cache
// of decoded images stores it.
type imageSet struct {
	shape   [3]int
	classes []string
	has     [2]bool // whether the folder has the split
	pix     [2][]byte
	y       [2][]int32
}

// readImageSet lists, labels, decodes and checks the images at root.
func readImageSet(root string, classes []string) (*imageSet, error) {
	var (
		files []imageFile
		err   error
	)
	st, statErr := os.Stat(root)
	switch {
	case statErr != nil:
		return nil, &FileError{Path: root, Problem: fmt.Sprintf("cannot read: %v", statErr), Hint: "point data.path at a directory or .tar.gz of <split>/<class>/<image>"}
	case st.IsDir():
		files, err = listImageDir(root)
	default:
		files, err = listImageArchive(root)
	}
	if err != nil {
		return nil, err
	}
	names, err := labelImages(root, files, classes)
	if err != nil {
		return nil, err
	}
	return assembleImages(names, files, decodeImages(files))
}

// dataset returns the images as a Dataset: values byte/255.
func (s *imageSet) dataset(name, source string) *Dataset {
	d := &Dataset{Name: name, Shape: s.shape[:], Classes: len(s.classes), Source: source, Preprocessing: []string{"scale-unit"}}
	dim := s.shape[0] * s.shape[1] * s.shape[2]
	for k := range imageSplits {
		if !s.has[k] {
			continue
		}
		sp := &Split{X: scaleBytes(s.pix[k]), Y: s.y[k], N: len(s.y[k]), D: dim}
		if k == 0 {
			d.Train = sp
		} else {
			d.Test = sp
		}
	}
	return d
}

// imageEntry files the regular file at rel (slash-separated, relative to the folder's root)
// into files, or says why it does not belong. It returns false for a hidden file.
func imageEntry(rel, where string, data []byte) (imageFile, bool, error) {
	parts := strings.Split(rel, "/")
	for _, p := range parts {
		if strings.HasPrefix(p, ".") {
			return imageFile{}, false, nil
		}
	}
	if len(parts) != 3 {
		return imageFile{}, false, &FileError{Path: where, Problem: "not at <split>/<class>/<image>", Hint: "an image folder holds train/CLASS/IMAGE and test/CLASS/IMAGE files only; move or remove it"}
	}
	split := slices.Index(imageSplits, parts[0])
	if split < 0 {
		return imageFile{}, false, &FileError{Path: where, Problem: fmt.Sprintf("split folder %q is neither train nor test", parts[0]), Hint: "rename the folder train or test, or remove it"}
	}
	switch strings.ToLower(path.Ext(parts[2])) {
	case ".jpg", ".jpeg", ".png":
	default:
		return imageFile{}, false, &FileError{Path: where, Problem: "not a .jpg, .jpeg or .png file", Hint: "convert it to JPEG or PNG, or remove it"}
	}
	return imageFile{split: split, class: parts[1], rel: rel, where: where, data: data}, true, nil
}

// stripTop removes a single top folder that every entry shares, when no entry is a split
// folder at the top (an archive of the folder itself, as tar -czf NAME.tar.gz NAME/ makes).
func stripTop(rels []string) []string {
	top := ""
	for _, r := range rels {
		first, _, ok := strings.Cut(r, "/")
		if !ok || slices.Contains(imageSplits, first) || (top != "" && first != top) || strings.HasPrefix(first, ".") {
			return rels
		}
		top = first
	}
	out := make([]string, len(rels))
	for i, r := range rels {
		out[i] = strings.TrimPrefix(r, top+"/")
	}
	return out
}

// listImageDir lists the images of the folder dir.
func listImageDir(dir string) ([]imageFile, error) {
	var rels []string
	err := filepath.WalkDir(dir, func(p string, e fs.DirEntry, err error) error {
		if err != nil {
			return &FileError{Path: p, Problem: fmt.Sprintf("cannot read: %v", err)}
		}
		if e.Type().IsRegular() {
			rel, _ := filepath.Rel(dir, p)
			rels = append(rels, filepath.ToSlash(rel))
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	stripped := stripTop(rels)
	var files []imageFile
	for i, rel := range stripped {
		f, ok, err := imageEntry(rel, filepath.Join(dir, filepath.FromSlash(rels[i])), nil)
		if err != nil {
			return nil, err
		}
		if ok {
			files = append(files, f)
		}
	}
	return files, nil
}

// listImageArchive reads the images of the .tar.gz archive into memory.
func listImageArchive(archive string) ([]imageFile, error) {
	f, err := os.Open(archive)
	if err != nil {
		return nil, &FileError{Path: archive, Problem: fmt.Sprintf("cannot open: %v", err)}
	}
	defer f.Close()
	zr, err := gzip.NewReader(f)
	if err != nil {
		return nil, &FileError{Path: archive, Problem: fmt.Sprintf("not a gzip archive: %v", err), Hint: "give a directory or a .tar.gz of <split>/<class>/<image>"}
	}
	defer zr.Close()
	tr := tar.NewReader(zr)
	var (
		rels  []string
		datas [][]byte
	)
	for {
		h, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, &FileError{Path: archive, Problem: fmt.Sprintf("truncated or corrupt archive after %d files: %v", len(rels), err)}
		}
		if h.Typeflag != tar.TypeReg {
			continue
		}
		if h.Size > maxImageBytes {
			return nil, &FileError{Path: archive + ":" + h.Name, Problem: fmt.Sprintf("%d bytes, more than an image of this reader's limit of %d", h.Size, maxImageBytes)}
		}
		b, err := readAtMost(tr, h.Size)
		if err != nil {
			return nil, &FileError{Path: archive + ":" + h.Name, Problem: fmt.Sprintf("truncated: announces %d bytes but only %d follow (%v)", h.Size, len(b), err)}
		}
		rels = append(rels, strings.TrimPrefix(path.Clean(h.Name), "./"))
		datas = append(datas, b)
	}
	// Read to the end so that gzip verifies its checksum.
	if _, err := io.Copy(io.Discard, zr); err != nil {
		return nil, &FileError{Path: archive, Problem: fmt.Sprintf("corrupt archive: %v", err)}
	}
	stripped := stripTop(rels)
	var files []imageFile
	for i, rel := range stripped {
		f, ok, err := imageEntry(rel, archive+":"+rels[i], datas[i])
		if err != nil {
			return nil, err
		}
		if ok {
			files = append(files, f)
		}
	}
	return files, nil
}

// labelImages gives every file its label and sorts files by split, then class by class in
// turn (see the package comment on image folders). It returns
// the class names in label order.
func labelImages(root string, files []imageFile, declared []string) ([]string, error) {
	if len(files) == 0 {
		return nil, &FileError{Path: root, Problem: "no images: want train/CLASS/IMAGE and/or test/CLASS/IMAGE files (.jpg, .jpeg or .png)"}
	}
	// inSplit[s][class] counts the images of a class in split s.
	inSplit := [2]map[string]int{{}, {}}
	for _, f := range files {
		inSplit[f.split][f.class]++
	}
	names := slices.Clone(declared)
	if len(names) == 0 {
		for s := range inSplit {
			for c := range inSplit[s] {
				if !slices.Contains(names, c) {
					names = append(names, c)
				}
			}
		}
		slices.Sort(names)
	}
	if dup := firstDuplicate(names); dup != "" {
		return nil, fmt.Errorf("data: %s: class %q is declared twice: list each class once (data.classes)", root, dup)
	}
	for s, counts := range inSplit {
		if len(counts) == 0 {
			continue // a split that is absent altogether
		}
		for _, c := range slices.Sorted(maps.Keys(counts)) {
			if !slices.Contains(names, c) {
				return nil, &FileError{Path: root, Problem: fmt.Sprintf("class folder %s/%s is not one of the declared classes %v", imageSplits[s], c, names), Hint: "add it to data.classes or remove the folder"}
			}
		}
		for _, c := range names {
			if counts[c] == 0 {
				other := imageSplits[1-s]
				return nil, &FileError{Path: root, Problem: fmt.Sprintf("class %q has no images in %s (no folder %s/%s) but the dataset has it (%d images in %s)", c, imageSplits[s], imageSplits[s], c, inSplit[1-s][c], other),
					Hint: "every split needs every class: add the folder, or remove the class from the other split (and from data.classes)"}
			}
		}
	}
	for i := range files {
		files[i].label = int32(slices.Index(names, files[i].class))
	}
	slices.SortFunc(files, func(a, b imageFile) int {
		if a.split != b.split {
			return a.split - b.split
		}
		if a.label != b.label {
			return int(a.label - b.label)
		}
		return strings.Compare(a.rel, b.rel)
	})
	// Interleave the classes: a file's rank among its class's sorted files first, then its
	// label, so that every prefix of a split (data.train_subset) holds the classes in turn.
	rank := make([]int, len(files))
	for i := range files {
		if i > 0 && files[i].split == files[i-1].split && files[i].label == files[i-1].label {
			rank[i] = rank[i-1] + 1
		}
		files[i].rank = rank[i]
	}
	slices.SortStableFunc(files, func(a, b imageFile) int {
		if a.split != b.split {
			return a.split - b.split
		}
		if a.rank != b.rank {
			return a.rank - b.rank
		}
		return int(a.label - b.label)
	})
	return names, nil
}

func firstDuplicate(names []string) string {
	seen := map[string]bool{}
	for _, n := range names {
		if seen[n] {
			return n
		}
		seen[n] = true
	}
	return ""
}

// decodeImages decodes every file on GOMAXPROCS workers; image i of the result is file i's.
func decodeImages(files []imageFile) []decodedImage {
	out := make([]decodedImage, len(files))
	var next atomic.Int64
	var wg sync.WaitGroup
	for range min(runtime.GOMAXPROCS(0), len(files)) {
		wg.Go(func() {
			for {
				i := int(next.Add(1)) - 1
				if i >= len(files) {
					return
				}
				out[i] = decodeImage(files[i])
			}
		})
	}
	wg.Wait()
	return out
}

// decodeImage decodes one file into CHW bytes.
func decodeImage(f imageFile) decodedImage {
	b := f.data
	if b == nil {
		var err error
		if b, err = os.ReadFile(f.where); err != nil {
			return decodedImage{decodeErr: &FileError{Path: f.where, Problem: fmt.Sprintf("cannot read: %v", err)}}
		}
	}
	var (
		img    image.Image
		err    error
		format = "PNG"
	)
	if ext := strings.ToLower(path.Ext(f.rel)); ext == ".png" {
		img, err = png.Decode(bytes.NewReader(b))
	} else {
		format = "JPEG"
		img, err = jpeg.Decode(bytes.NewReader(b))
	}
	if err != nil {
		return decodedImage{decodeErr: &FileError{Path: f.where, Problem: fmt.Sprintf("cannot decode %s: %v", format, err), Hint: "replace the file with a good copy, or remove it"}}
	}
	return toCHW(img)
}

// toCHW returns img's pixels channel-major: one plane for a grayscale image, else red, green
// and blue planes (alpha is dropped; JPEG's YCbCr is converted with color.YCbCrToRGB).
func toCHW(img image.Image) decodedImage {
	r := img.Bounds()
	w, h := r.Dx(), r.Dy()
	n := w * h
	switch m := img.(type) {
	case *image.Gray:
		pix := make([]byte, n)
		for y := range h {
			copy(pix[y*w:(y+1)*w], m.Pix[y*m.Stride:y*m.Stride+w])
		}
		return decodedImage{pix: pix, c: 1, h: h, w: w, grayscale: true}
	case *image.YCbCr:
		pix := make([]byte, 3*n)
		for y := range h {
			for x := range w {
				yi, ci := m.YOffset(r.Min.X+x, r.Min.Y+y), m.COffset(r.Min.X+x, r.Min.Y+y)
				rr, gg, bb := color.YCbCrToRGB(m.Y[yi], m.Cb[ci], m.Cr[ci])
				k := y*w + x
				pix[k], pix[n+k], pix[2*n+k] = rr, gg, bb
			}
		}
		return decodedImage{pix: pix, c: 3, h: h, w: w}
	}
	if cm := img.ColorModel(); cm == color.GrayModel || cm == color.Gray16Model {
		pix := make([]byte, n)
		for y := range h {
			for x := range w {
				pix[y*w+x] = color.GrayModel.Convert(img.At(r.Min.X+x, r.Min.Y+y)).(color.Gray).Y
			}
		}
		return decodedImage{pix: pix, c: 1, h: h, w: w, grayscale: true}
	}
	pix := make([]byte, 3*n)
	for y := range h {
		for x := range w {
			c := color.NRGBAModel.Convert(img.At(r.Min.X+x, r.Min.Y+y)).(color.NRGBA)
			k := y*w + x
			pix[k], pix[n+k], pix[2*n+k] = c.R, c.G, c.B
		}
	}
	return decodedImage{pix: pix, c: 3, h: h, w: w}
}

// assembleImages checks the decoded images (the first failure, in file order, is returned)
// and lays them out per split.
func assembleImages(classes []string, files []imageFile, imgs []decodedImage) (*imageSet, error) {
	channels := 1
	for i, m := range imgs {
		if m.decodeErr != nil {
			return nil, m.decodeErr
		}
		if m.h != imgs[0].h || m.w != imgs[0].w {
			return nil, &FileError{Path: files[i].where, Problem: fmt.Sprintf("%d×%d pixels, but %s is %d×%d", m.w, m.h, files[0].where, imgs[0].w, imgs[0].h),
				Hint: "every image must have the same size: resize them all to one size"}
		}
		if !m.grayscale {
			channels = 3
		}
	}
	set := &imageSet{shape: [3]int{channels, imgs[0].h, imgs[0].w}, classes: classes}
	dim := channels * imgs[0].h * imgs[0].w
	var n [2]int
	for _, f := range files {
		n[f.split]++
	}
	for k := range imageSplits {
		set.has[k] = n[k] > 0
		set.pix[k] = make([]byte, 0, n[k]*dim)
		set.y[k] = make([]int32, 0, n[k])
	}
	for i, f := range files {
		m := imgs[i]
		set.pix[f.split] = append(set.pix[f.split], m.pix...)
		if m.c == 1 && channels == 3 {
			set.pix[f.split] = append(set.pix[f.split], m.pix...)
			set.pix[f.split] = append(set.pix[f.split], m.pix...)
		}
		set.y[f.split] = append(set.y[f.split], f.label)
		imgs[i].pix = nil
	}
	return set, nil
}
