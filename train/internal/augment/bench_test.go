package augment

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/dptrain/dptrain/data"
	"github.com/dptrain/dptrain/models"
)

// The Fashion-MNIST CNN of Tramèr & Boneh at batch 256: the model's own clipped sum and
// per-sample sum (at 256 and at 1024 = 4·256 rows), and the wrapper's clipped sum for K = 2
// and 4 (crops of 4 and flips), which runs the model's per-sample sum on K·256 rows.
func BenchmarkCNN(b *testing.B) {
	nw, err := models.New(models.Spec{Kind: "cnn-tramer-boneh"}, rand.New(rand.NewPCG(1, 2)))
	if err != nil {
		b.Fatal(err)
	}
	np := len(nw.Params())
	grad := make([]float32, np)
	batch := func(n int) data.Batch {
		r := rand.New(rand.NewPCG(uint64(n), 1))
		bt := data.Batch{X: make([]float32, n*784), Y: make([]int32, n), N: n}
		for i := range bt.X {
			bt.X[i] = float32(r.NormFloat64())
		}
		for i := range bt.Y {
			bt.Y[i] = int32(r.IntN(10))
		}
		return bt
	}
	b256, b1024 := batch(256), batch(1024)
	b.Run("model-clipped-256", func(b *testing.B) {
		for b.Loop() {
			nw.ClippedGradSum(b256, 0.1, grad, nil)
		}
	})
	b.Run("model-persample-256", func(b *testing.B) {
		for b.Loop() {
			nw.PerSampleGradSum(b256, func(int, []float32) {}, grad)
		}
	})
	b.Run("model-clipped-1024", func(b *testing.B) {
		for b.Loop() {
			nw.ClippedGradSum(b1024, 0.1, grad, nil)
		}
	})
	b.Run("model-persample-1024", func(b *testing.B) {
		for b.Loop() {
			nw.PerSampleGradSum(b1024, func(int, []float32) {}, grad)
		}
	})
	for _, k := range []int{2, 4} {
		o, err := New(nw, Config{Multiplicity: k, CropPadding: 4, Flip: true, Shape: [3]int{1, 28, 28}}, [32]byte{}, zero)
		if err != nil {
			b.Fatal(err)
		}
		b.Run(fmt.Sprintf("augment-clipped-256-K%d", k), func(b *testing.B) {
			for b.Loop() {
				o.ClippedGradSum(b256, 0.1, grad, nil)
			}
		})
	}
}

// Softmax regression on ScatterNet features (81×7×7, Tramèr & Boneh's linear model) at batch
// 1024: the model's clipped sum, and the wrapper's over two precomputed views per example.
func BenchmarkViewsLinear(b *testing.B) {
	nw, err := models.New(models.Spec{Kind: "logreg", Input: []int{81, 7, 7}, Classes: 10}, rand.New(rand.NewPCG(1, 2)))
	if err != nil {
		b.Fatal(err)
	}
	const d, n = 81 * 7 * 7, 1024
	grad := make([]float32, len(nw.Params()))
	r := rand.New(rand.NewPCG(3, 4))
	bt := data.Batch{X: make([]float32, 2*n*d), Y: make([]int32, n), N: n}
	for i := range bt.X {
		bt.X[i] = float32(r.NormFloat64())
	}
	for i := range bt.Y {
		bt.Y[i] = int32(r.IntN(10))
	}
	one := data.Batch{X: bt.X[:n*d], Y: bt.Y, N: n}
	b.Run("model-clipped", func(b *testing.B) {
		for b.Loop() {
			nw.ClippedGradSum(one, 0.1, grad, nil)
		}
	})
	o, err := New(nw, Config{Multiplicity: 2, Views: 2, Shape: [3]int{81, 7, 7}}, [32]byte{}, zero)
	if err != nil {
		b.Fatal(err)
	}
	b.Run("views-clipped-K2", func(b *testing.B) {
		for b.Loop() {
			o.ClippedGradSum(bt, 0.1, grad, nil)
		}
	})
}
