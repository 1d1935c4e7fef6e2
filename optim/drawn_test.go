package optim

import (
	"fmt"
	"math"
	"math/rand/v2"

	"github.com/dptrain/dptrain/data"
)

// drawn returns the declaration of batch k of a real sampler of the given scheme over n
// examples: batch size b for fixed-size schemes, rate q = b/n for the Poisson schemes (b is
// then given as q·n), rejection threshold minBatch for Poisson with rejection. A step takes
// its BatchInfo only from a sampler, so tests do too.
func drawn(scheme data.Scheme, n int, b float64, minBatch, k int) BatchInfo {
	s, err := data.NewSampler(scheme, n, int(math.Round(b)), minBatch, rand.New(rand.NewPCG(1, 2)))
	if err != nil {
		panic(fmt.Sprintf("test sampler %s n=%d b=%v: %v", scheme, n, b, err))
	}
	if math.Abs(s.SampleRate()*float64(n)-b) > 1e-9*b && scheme != data.SchemeFull {
		panic(fmt.Sprintf("test sampler %s: rate %v·n ≠ %v", scheme, s.SampleRate(), b))
	}
	return data.PlannedBatch(s, k)
}
