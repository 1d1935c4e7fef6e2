package scattering

import (
	"context"
	"fmt"
	"math"
	"runtime"
	"sync"

	"github.com/dptrain/dptrain/data"
)

// Options selects the transform and the per-example normalisation of Features.
type Options struct {
	// J is the number of scales and L the number of angles (0 means 2 and 8).
	J, L int
	// Groups, when > 0, normalises each example's output by GroupNorm without affine
	// parameters: within each of Groups groups of consecutive channels, mean 0 and variance 1
	// over the group's values (ε = 1e-5), as Tramèr & Boneh's ScatterNet models do. It looks
	// at one example only, so it costs no privacy.
	Groups int
	// Workers is the number of goroutines (0 means GOMAXPROCS).
	Workers int
	// Progress, when set, is called as the images are handed out: done of total images of
	// the split named split ("train" or "test"), about every percent and at the end.
	Progress func(split string, done, total int)
}

func (o Options) withDefaults() Options {
	if o.J == 0 {
		o.J = 2
	}
	if o.L == 0 {
		o.L = 8
	}
	if o.Workers <= 0 {
		o.Workers = runtime.GOMAXPROCS(0)
	}
	return o
}

// String names the transform as it appears in Dataset.Preprocessing.
func (o Options) String() string {
	o = o.withDefaults()
	s := fmt.Sprintf("scatternet(J=%d,L=%d", o.J, o.L)
	if o.Groups > 0 {
		s += fmt.Sprintf(",groupnorm=%d", o.Groups)
	}
	return s + ")"
}

// Features returns a new dataset holding the scattering features of ds's images (both
// splits), with Shape [C·K, ⌊H/2^J⌋, ⌊W/2^J⌋]; labels are shared with ds.
func Features(ctx context.Context, ds *data.Dataset, opts Options) (*data.Dataset, error) {
	opts = opts.withDefaults()
	if len(ds.Shape) != 3 {
		return nil, fmt.Errorf("scattering: dataset %s has example shape %v; the scattering transform needs images (C×H×W)", ds.Name, ds.Shape)
	}
	inC, h, w := ds.Shape[0], ds.Shape[1], ds.Shape[2]
	s, err := New(h, w, opts.J, opts.L)
	if err != nil {
		return nil, err
	}
	shape := s.OutShape(inC)
	if opts.Groups > 0 && shape[0]%opts.Groups != 0 {
		return nil, fmt.Errorf("scattering: %d groups do not divide the %d output channels: choose a divisor (e.g. %d)", opts.Groups, shape[0], shape[0]/s.Channels()*9)
	}
	out := &data.Dataset{Name: ds.Name, Shape: shape, Classes: ds.Classes, Source: ds.Source,
		Preprocessing: append(append([]string(nil), ds.Preprocessing...), opts.String())}
	for _, sp := range []struct{ in, out **data.Split }{{&ds.Train, &out.Train}, {&ds.Test, &out.Test}} {
		if *sp.in == nil {
			continue
		}
		name := "train"
		if sp.out == &out.Test {
			name = "test"
		}
		o, err := s.split(ctx, *sp.in, name, inC, shape, opts)
		if err != nil {
			return nil, err
		}
		*sp.out = o
	}
	return out, nil
}

func (s *Scattering) split(ctx context.Context, in *data.Split, name string, inC int, shape []int, opts Options) (*data.Split, error) {
	d := shape[0] * shape[1] * shape[2]
	out := &data.Split{X: make([]float32, in.N*d), Y: in.Y, N: in.N, D: d}
	var wg sync.WaitGroup
	next := make(chan int)
	for range opts.Workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			ws := s.NewWorkspace()
			for i := range next {
				row := out.X[i*d : (i+1)*d]
				s.Apply(row, in.Row(i), inC, ws)
				if opts.Groups > 0 {
					groupNorm(row, opts.Groups)
				}
			}
		}()
	}
	var err error
	every := max(1, in.N/100)
feed:
	for i := range in.N {
		if opts.Progress != nil && i%every == 0 {
			opts.Progress(name, i, in.N)
		}
		select {
		case next <- i:
		case <-ctx.Done():
			err = ctx.Err()
			break feed
		}
	}
	close(next)
	wg.Wait()
	if err != nil {
		return nil, fmt.Errorf("scattering: interrupted: %w", err)
	}
	if opts.Progress != nil {
		opts.Progress(name, in.N, in.N)
	}
	return out, nil
}

// groupNorm normalises x, split into g equal consecutive groups, to mean 0 and variance 1 per
// group (ε = 1e-5 added to the variance, as torch's GroupNorm).
func groupNorm(x []float32, g int) {
	size := len(x) / g
	for k := range g {
		part := x[k*size : (k+1)*size]
		var mean float64
		for _, v := range part {
			mean += float64(v)
		}
		mean /= float64(size)
		var v2 float64
		for _, v := range part {
			d := float64(v) - mean
			v2 += d * d
		}
		inv := 1 / math.Sqrt(v2/float64(size)+1e-5)
		for i, v := range part {
			part[i] = float32((float64(v) - mean) * inv)
		}
	}
}
