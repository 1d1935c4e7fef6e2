package train

import (
	"bytes"
	"image"
	"image/color"
	"image/png"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/dptrain/dptrain/train/config"
)

// A config reads its own images from data.path, in the order of data.classes.
func TestLoadDataImageFolder(t *testing.T) {
	dir := t.TempDir()
	for _, f := range []string{"train/a/1.png", "train/b/1.png", "train/b/2.png", "test/a/1.png", "test/b/1.png"} {
		var b bytes.Buffer
		img := image.NewGray(image.Rect(0, 0, 3, 2))
		img.SetGray(0, 0, color.Gray{Y: 255})
		png.Encode(&b, img)
		p := filepath.Join(dir, filepath.FromSlash(f))
		os.MkdirAll(filepath.Dir(p), 0o755)
		os.WriteFile(p, b.Bytes(), 0o644)
	}
	cfg, err := config.ParseConfig([]byte(minimal), []string{"data.dataset=image-folder", "data.path=" + dir, "data.normalize=unit", "data.classes=[b, a]"})
	if err != nil {
		t.Fatal(err)
	}
	ds, train, test, err := LoadData(t.Context(), cfg, nil)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(ds.Shape, []int{1, 2, 3}) || ds.Classes != 2 || !slices.Equal(train.Y, []int32{0, 1, 0}) || test.Len() != 2 || train.X[0] != 1 {
		t.Errorf("shape %v, %d classes, train labels %v, %d test, first value %v; want [1 2 3], 2, [0 1 0], 2, 1", ds.Shape, ds.Classes, train.Y, test.Len(), train.X[0])
	}
}
