package mpi

import (
	"fmt"
	"sync"
	"testing"
)

// BenchmarkAllreduceSum measures the rank-ordered all-reduce of a float32 gradient the size of
// the CNN (26,010 parameters) and of the MLP (407,050). Run alone it uses two in-process
// ranks; under mpirun (a build with -tags mpi) it uses the job's ranks, and every rank must run
// the same number of iterations:
//
//	go test -c -tags mpi -o /tmp/mpi.test ./internal/mpi
//	mpirun -np 2 --mca btl tcp,self /tmp/mpi.test -test.run '^$' -test.bench AllreduceSum -test.benchtime 200x
func BenchmarkAllreduceSum(b *testing.B) {
	w, err := World()
	if err != nil {
		b.Fatal(err)
	}
	for _, n := range []int{26010, 407050} {
		b.Run(fmt.Sprintf("params=%d", n), func(b *testing.B) {
			b.SetBytes(int64(4 * n))
			if w.Size() > 1 {
				v := make([]float32, n)
				b.ResetTimer()
				for range b.N {
					if err := AllreduceSum(w, v); err != nil {
						b.Fatal(err)
					}
				}
				return
			}
			cs := Local(2)
			var wg sync.WaitGroup
			b.ResetTimer()
			for r := range 2 {
				wg.Add(1)
				go func() {
					defer wg.Done()
					v := make([]float32, n)
					for range b.N {
						if err := AllreduceSum(cs[r], v); err != nil {
							b.Error(err)
							return
						}
					}
				}()
			}
			wg.Wait()
		})
	}
}
