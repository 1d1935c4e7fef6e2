package data

import (
	"bytes"
	"fmt"
	"image"
	"image/color"
	"image/jpeg"
	"image/png"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// pngImage encodes a w×h PNG whose pixel (x, y) is (v+x, v+y, v+x+y) in RGB, or v+x+y in gray.
func pngImage(t testing.TB, w, h int, v uint8, gray bool) []byte {
	t.Helper()
	var img image.Image
	if gray {
		g := image.NewGray(image.Rect(0, 0, w, h))
		for y := range h {
			for x := range w {
				g.SetGray(x, y, color.Gray{Y: v + uint8(x+y)})
			}
		}
		img = g
	} else {
		c := image.NewNRGBA(image.Rect(0, 0, w, h))
		for y := range h {
			for x := range w {
				c.SetNRGBA(x, y, color.NRGBA{R: v + uint8(x), G: v + uint8(y), B: v + uint8(x+y), A: 255})
			}
		}
		img = c
	}
	var b bytes.Buffer
	if err := png.Encode(&b, img); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

// jpegImage encodes a w×h JPEG of flat colour v at quality 95.
func jpegImage(t testing.TB, w, h int, v uint8) []byte {
	t.Helper()
	img := image.NewRGBA(image.Rect(0, 0, w, h))
	for i := range img.Pix {
		img.Pix[i] = v
	}
	var b bytes.Buffer
	if err := jpeg.Encode(&b, img, &jpeg.Options{Quality: 95}); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

// writeImageFolder writes files as a folder, or as an archive images.tar.gz, and returns its path.
func writeImageFolder(t *testing.T, files map[string][]byte, archive bool) string {
	t.Helper()
	dir := t.TempDir()
	if archive {
		return writeFile(t, filepath.Join(dir, "images.tar.gz"), packTarGz(t, "", files))
	}
	for n, b := range files {
		writeFile(t, filepath.Join(dir, filepath.FromSlash(n)), b)
	}
	return dir
}

// twoClasses is a small image folder: 3 training and 2 test PNGs of 4×3 pixels, classes cat
// and dog.
func twoClasses(t *testing.T) map[string][]byte {
	return map[string][]byte{
		"train/dog/1.png":  pngImage(t, 4, 3, 10, false),
		"train/cat/10.png": pngImage(t, 4, 3, 20, false),
		"train/cat/2.png":  pngImage(t, 4, 3, 30, false),
		"test/cat/a.png":   pngImage(t, 4, 3, 40, false),
		"test/dog/b.png":   pngImage(t, 4, 3, 50, false),
		".DS_Store":        []byte("hidden files are passed over"),
	}
}

func TestReadImageFolder(t *testing.T) {
	for _, archive := range []bool{false, true} {
		for _, tc := range []struct {
			name    string
			files   func(t *testing.T) map[string][]byte
			classes []string
			shape   []int
			train   []int32 // training labels in order
			first   []byte  // the first training row's first values, ×255
		}{
			// Sorted classes cat, dog, taking turns; cat's files in sorted order: 10.png
			// before 2.png.
			{"png sorted classes", twoClasses, nil, []int{3, 3, 4}, []int32{0, 1, 0}, []byte{20, 21, 22, 23, 20, 21}},
			{"png declared classes", twoClasses, []string{"dog", "cat"}, []int{3, 3, 4}, []int32{0, 1, 1}, []byte{10, 11, 12, 13, 10, 11}},
			{"single top folder", func(t *testing.T) map[string][]byte {
				out := map[string][]byte{}
				for n, b := range twoClasses(t) {
					out["photos/"+n] = b
				}
				return out
			}, nil, []int{3, 3, 4}, []int32{0, 1, 0}, []byte{20, 21, 22, 23, 20, 21}},
			{"grayscale", func(t *testing.T) map[string][]byte {
				return map[string][]byte{"train/a/x.png": pngImage(t, 2, 2, 7, true), "train/b/y.png": pngImage(t, 2, 2, 9, true)}
			}, nil, []int{1, 2, 2}, []int32{0, 1}, []byte{7, 8, 8, 9}},
			{"grayscale beside colour", func(t *testing.T) map[string][]byte {
				return map[string][]byte{"train/a/x.png": pngImage(t, 2, 2, 7, true), "train/b/y.png": pngImage(t, 2, 2, 9, false)}
			}, nil, []int{3, 2, 2}, []int32{0, 1}, []byte{7, 8, 8, 9, 7, 8, 8, 9}},
		} {
			t.Run(fmt.Sprintf("%s archive=%v", tc.name, archive), func(t *testing.T) {
				p := writeImageFolder(t, tc.files(t), archive)
				d, err := ReadImageFolder(p, tc.classes)
				if err != nil {
					t.Fatal(err)
				}
				if err := d.Check(); err != nil {
					t.Fatal(err)
				}
				if !slices.Equal(d.Shape, tc.shape) || !slices.Equal(d.Train.Y, tc.train) {
					t.Errorf("shape %v labels %v, want %v %v", d.Shape, d.Train.Y, tc.shape, tc.train)
				}
				for i, v := range tc.first {
					if got := d.Train.X[i]; got != float32(v)/255 {
						t.Errorf("first row value %d = %v, want %d/255 (CHW, scaled as the CIFAR-10 reader scales)", i, got, v)
					}
				}
			})
		}
	}
}

// A JPEG decodes to its colour within JPEG's error, in three channels.
func TestReadImageFolderJPEG(t *testing.T) {
	p := writeImageFolder(t, map[string][]byte{"train/a/0.jpg": jpegImage(t, 8, 8, 100), "train/b/0.JPEG": jpegImage(t, 8, 8, 200)}, true)
	d, err := ReadImageFolder(p, nil)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(d.Shape, []int{3, 8, 8}) || d.Test != nil {
		t.Fatalf("shape %v, test %v; want [3 8 8] and no test split", d.Shape, d.Test)
	}
	for i, want := range []float32{100, 200} {
		for _, v := range d.Train.Row(i) {
			if v*255 < want-2 || v*255 > want+2 {
				t.Fatalf("image %d has value %v·255, want %v ± 2", i, v*255, want)
			}
		}
	}
}

func TestReadImageFolderRefuses(t *testing.T) {
	corrupt := jpegImage(t, 4, 3, 50)
	corrupt = corrupt[:len(corrupt)/2]
	for _, tc := range []struct {
		name    string
		edit    func(files map[string][]byte)
		classes []string
		want    string // in the error; ROOT is the folder's path
	}{
		{"corrupt JPEG", func(f map[string][]byte) { f["train/cat/3.jpg"] = corrupt }, nil,
			"ROOT" + string(filepath.Separator) + "train/cat/3.jpg: cannot decode JPEG"},
		{"missing class", func(f map[string][]byte) { delete(f, "test/dog/b.png") }, nil,
			`class "dog" has no images in test (no folder test/dog) but the dataset has it (1 images in train)`},
		{"wrong size", func(f map[string][]byte) { f["test/dog/b.png"] = pngImage(t, 3, 3, 0, false) }, nil,
			"test/dog/b.png: 3×3 pixels, but ROOT" + string(filepath.Separator) + "train/cat/10.png is 4×3; every image must have the same size"},
		{"undeclared class", nil, []string{"cat"}, `class folder train/dog is not one of the declared classes [cat]`},
		{"declared class absent", nil, []string{"cat", "dog", "eel"}, `class "eel" has no images in train`},
		{"not an image", func(f map[string][]byte) { f["train/cat/notes.txt"] = []byte("x") }, nil, "train/cat/notes.txt: not a .jpg, .jpeg or .png file"},
		{"outside a class", func(f map[string][]byte) { f["train/x.png"] = pngImage(t, 4, 3, 0, false) }, nil, "train/x.png: not at <split>/<class>/<image>"},
		{"other split", func(f map[string][]byte) { f["val/cat/x.png"] = pngImage(t, 4, 3, 0, false) }, nil, `split folder "val" is neither train nor test`},
	} {
		for _, archive := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s archive=%v", tc.name, archive), func(t *testing.T) {
				files := twoClasses(t)
				if tc.edit != nil {
					tc.edit(files)
				}
				p := writeImageFolder(t, files, archive)
				root := p
				want := tc.want
				if archive {
					// Inside an archive, a file is named ARCHIVE:MEMBER.
					want = strings.ReplaceAll(want, "ROOT"+string(filepath.Separator), "ROOT:")
				}
				want = strings.ReplaceAll(want, "ROOT", root)
				_, err := ReadImageFolder(p, tc.classes)
				if err == nil || !strings.Contains(err.Error(), want) {
					t.Errorf("error\n  %v\nwant it to contain\n  %s", err, want)
				}
			})
		}
	}
}

// The cache of decoded images serves the second load, is refused when damaged or when the
// classes differ, and gives the same dataset.
func TestImageFolderCache(t *testing.T) {
	p := writeImageFolder(t, twoClasses(t), true)
	cache := t.TempDir()
	load := func(classes []string) *Dataset {
		t.Helper()
		l := &Locator{Dir: p, CacheDir: cache, Classes: classes}
		d, err := l.Load(t.Context(), ImageFolderName)
		if err != nil {
			t.Fatal(err)
		}
		return d
	}
	fromCache := func(d *Dataset) bool { return strings.HasSuffix(d.Source, "decoded images from the cache") }
	first := load(nil)
	second := load(nil)
	if fromCache(first) || !fromCache(second) {
		t.Fatalf("sources %q then %q: want a decode, then the cache", first.Source, second.Source)
	}
	if !slices.Equal(first.Train.X, second.Train.X) || !slices.Equal(first.Test.Y, second.Test.Y) || !slices.Equal(first.Shape, second.Shape) {
		t.Error("the cache gives another dataset than the decode")
	}
	if d := load([]string{"dog", "cat"}); fromCache(d) || d.Train.Y[0] != 0 {
		t.Errorf("other classes: source %q, labels %v: want a decode with dog first", d.Source, d.Train.Y)
	}
	files, _ := filepath.Glob(filepath.Join(cache, ImageFolderName, "decoded-*.bin"))
	if len(files) != 2 {
		t.Fatalf("cache files %v, want one per class list", files)
	}
	for _, f := range files {
		b, _ := os.ReadFile(f)
		b[len(b)/2] ^= 1
		os.WriteFile(f, b, 0o644)
	}
	if d := load(nil); fromCache(d) || !slices.Equal(d.Train.X, first.Train.X) {
		t.Errorf("a damaged cache was used (source %q)", d.Source)
	}
	if d := load(nil); !fromCache(d) {
		t.Errorf("the damaged cache was not rewritten (source %q)", d.Source)
	}
}

func TestImageFolderNeedsAPath(t *testing.T) {
	_, err := (&Locator{}).Find(ImageFolderName)
	if err == nil || !strings.Contains(err.Error(), "set data.path") {
		t.Errorf("error %v, want one saying to set data.path", err)
	}
}

// The classes take turns within a split, so that a prefix (data.train_subset) holds every
// class, however the files are named.
func TestImageFolderPrefixHoldsEveryClass(t *testing.T) {
	files := map[string][]byte{}
	for _, c := range []string{"a", "b", "c"} {
		for i := range 3 {
			files[fmt.Sprintf("train/%s/%04d.png", c, i)] = pngImage(t, 2, 2, byte(10*i), false)
		}
	}
	d, err := ReadImageFolder(writeImageFolder(t, files, true), nil)
	if err != nil {
		t.Fatal(err)
	}
	if want := []int32{0, 1, 2, 0, 1, 2, 0, 1, 2}; !slices.Equal(d.Train.Y, want) {
		t.Errorf("labels %v, want %v", d.Train.Y, want)
	}
}
