package mpi

import (
	"bytes"
	"fmt"
	"math"
	"math/rand/v2"
	"sync"
	"testing"

	"github.com/dptrain/dptrain/comm"
)

// onRanks runs f on each of k in-process ranks at once and returns the first error.
func onRanks(k int, f func(c comm.Comm) error) error {
	cs := Local(k)
	errs := make([]error, k)
	var wg sync.WaitGroup
	for r := range k {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if errs[r] = f(cs[r]); errs[r] != nil {
				cs[r].Close() // the others stop waiting
			}
		}()
	}
	wg.Wait()
	for r, err := range errs {
		if err != nil {
			return fmt.Errorf("rank %d: %w", r, err)
		}
	}
	return nil
}

// AllreduceSum gives every rank the rank-ordered float64 sum of every element, rounded once,
// for lengths that do and do not divide by the number of ranks.
func TestAllreduceSumIsTheRankOrderedSum(t *testing.T) {
	for _, k := range []int{1, 2, 3, 4} {
		for _, n := range []int{1, 2, 5, 64, 1001} {
			in := make([][]float32, k)
			rng := rand.New(rand.NewPCG(uint64(k), uint64(n)))
			for r := range in {
				in[r] = make([]float32, n)
				for i := range in[r] {
					in[r][i] = float32(rng.NormFloat64() * math.Pow(10, float64(rng.IntN(8)-4)))
				}
			}
			want := make([]float32, n)
			for i := range want {
				var s float64
				for r := range k {
					s += float64(in[r][i])
				}
				want[i] = float32(s)
			}
			out := make([][]float32, k)
			err := onRanks(k, func(c comm.Comm) error {
				out[c.Rank()] = append([]float32(nil), in[c.Rank()]...)
				return AllreduceSum(c, out[c.Rank()])
			})
			if err != nil {
				t.Fatal(err)
			}
			for r := range k {
				for i := range want {
					if math.Float32bits(out[r][i]) != math.Float32bits(want[i]) {
						t.Fatalf("k=%d n=%d: rank %d element %d = %v, want %v", k, n, r, i, out[r][i], want[i])
					}
				}
			}
		}
	}
}

func TestBcastBytes(t *testing.T) {
	msg := []byte("the noise key")
	err := onRanks(3, func(c comm.Comm) error {
		var b []byte
		if c.Rank() == 1 {
			b = msg
		}
		got, err := BcastBytes(c, b, 1)
		if err != nil {
			return err
		}
		if !bytes.Equal(got, msg) {
			return fmt.Errorf("got %q", got)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// A rank that leaves makes the others' collectives fail instead of hanging.
func TestLeftRankFailsTheOthers(t *testing.T) {
	cs := Local(2)
	cs[1].Close()
	if err := AllreduceSum(cs[0], []float64{1, 2}); err == nil {
		t.Fatal("a collective with a departed rank succeeded")
	}
}

// Without the mpi build tag, a process that a launcher started as one of several ranks is
// refused with the build that can join; alone, it is a group of one.
func TestWorldWithoutMPI(t *testing.T) {
	if Built {
		t.Skip("built with MPI")
	}
	t.Setenv("OMPI_COMM_WORLD_SIZE", "")
	c, err := World()
	if err != nil || c.Size() != 1 || c.Rank() != 0 {
		t.Fatalf("World() = %v, %v; want a group of one", c, err)
	}
	t.Setenv("OMPI_COMM_WORLD_SIZE", "2")
	if _, err := World(); err != ErrNoMPI {
		t.Fatalf("under mpirun -np 2: %v, want ErrNoMPI", err)
	}
}
