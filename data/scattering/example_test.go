package scattering_test

import (
	"fmt"
	"log"

	"github.com/dptrain/dptrain/data/scattering"
)

// The scattering features of one 28×28 grey image (a bright square on black) at J = 2 scales
// and L = 8 angles, the ScatterNet setting of Tramèr & Boneh, "Differentially Private Learning
// Needs Better Features (or Much More Data)": 1 + J·L + L²·J(J−1)/2 = 81 channels of 7×7. The
// transform looks at no data, so it costs no privacy.
func Example() {
	s, err := scattering.New(28, 28, 2, 8)
	if err != nil {
		log.Fatal(err)
	}
	img := make([]float32, 28*28)
	for y := 10; y < 18; y++ {
		for x := 10; x < 18; x++ {
			img[y*28+x] = 1
		}
	}
	shape := s.OutShape(1)
	out := make([]float32, shape[0]*shape[1]*shape[2])
	s.Apply(out, img, 1, s.NewWorkspace())
	fmt.Println("channels:", s.Channels(), "shape (CHW):", shape)
	// The centre pixel of the order-0 channel (the low-pass average), of the first order-1
	// channel, and of the first order-2 channel.
	centre := 3*7 + 3
	fmt.Printf("order 0: %.3f, order 1: %.3f, order 2: %.3f\n", out[centre], out[49+centre], out[(1+2*8)*49+centre])
	// Output:
	// channels: 81 shape (CHW): [81 7 7]
	// order 0: 0.891, order 1: 0.036, order 2: 0.015
}
