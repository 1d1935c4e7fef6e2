package data_test

import (
	"fmt"
	"image"
	"image/color"
	"image/png"
	"log"
	"os"
	"path/filepath"

	"github.com/dptrain/dptrain/data"
)

// ExampleReadImageFolder reads a user's own images: train/ and test/ folders of one folder per
// class, here two 2×2 PNG images per split.
func ExampleReadImageFolder() {
	dir, err := os.MkdirTemp("", "images")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)
	for _, f := range []string{"train/cat/1.png", "train/dog/1.png", "test/cat/2.png", "test/dog/2.png"} {
		img := image.NewNRGBA(image.Rect(0, 0, 2, 2))
		img.Set(0, 0, color.NRGBA{R: 255, A: 255})
		p := filepath.Join(dir, filepath.FromSlash(f))
		os.MkdirAll(filepath.Dir(p), 0o755)
		out, err := os.Create(p)
		if err != nil {
			log.Fatal(err)
		}
		png.Encode(out, img)
		out.Close()
	}
	d, err := data.ReadImageFolder(dir, []string{"dog", "cat"}) // dog is label 0
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("shape (CHW):", d.Shape, "classes:", d.Classes)
	fmt.Println("train labels:", d.Train.Y, "test labels:", d.Test.Y)
	fmt.Println("first image's red plane:", d.Train.Row(0)[:4])
	// Output:
	// shape (CHW): [3 2 2] classes: 2
	// train labels: [0 1] test labels: [0 1]
	// first image's red plane: [1 0 0 0]
}
