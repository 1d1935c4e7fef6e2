package optim

import (
	"bytes"
	crand "crypto/rand"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"runtime"
	"sync"
)

// chunkSize is the number of coordinates filled from one derived stream. Output depends only
// on the generator's state and the vector's length, never on the number of workers, so a
// seeded run is reproducible on any machine.
const chunkSize = 1 << 16

// Noise is the source of all secret randomness of a run: Gaussian noise, ModelMix's mixing
// weights and, through Rand or Split, the sampler's choices. It is a ChaCha8 stream
// (math/rand/v2), seeded from crypto/rand by NewNoise. Gaussian noise is drawn from AES-256-CTR
// keystreams keyed by 32 bytes of that stream per chunk of 64Ki coordinates (keystream.go):
// four times cheaper per word than ChaCha8 here, with AES-NI.
//
// A Noise is not safe for concurrent use.
type Noise struct {
	src          *rand.ChaCha8
	rng          *rand.Rand
	reproducible bool
	workers      int
	pool         []*keystream // one per worker
}

// NewNoise returns a generator seeded with 32 bytes from crypto/rand: the default, and the only
// kind of run that may be released.
func NewNoise() (*Noise, error) {
	var seed [32]byte
	if _, err := crand.Read(seed[:]); err != nil {
		return nil, fmt.Errorf("optim: reading a seed from crypto/rand: %w", err)
	}
	return newNoise(seed, false), nil
}

// NewSeededNoise returns a generator whose whole stream is fixed by seed, for reproducible runs
// and tests. Anyone who knows the seed knows the noise, so such a run is not private: the
// trainer must warn that it is not for release. Reproducible reports true.
func NewSeededNoise(seed uint64) *Noise {
	var s [32]byte
	copy(s[:], "dptrain/optim seeded noise v1 ..")
	binary.LittleEndian.PutUint64(s[:8], seed)
	return newNoise(s, true)
}

func newNoise(seed [32]byte, reproducible bool) *Noise {
	return newNoiseFrom(rand.NewChaCha8(seed), reproducible)
}

func newNoiseFrom(src *rand.ChaCha8, reproducible bool) *Noise {
	return &Noise{src: src, rng: rand.New(src), reproducible: reproducible, workers: runtime.GOMAXPROCS(0)}
}

// Reproducible reports whether the stream was fixed by a caller's seed.
func (n *Noise) Reproducible() bool { return n.reproducible }

// Rand returns the generator as a *rand.Rand sharing this stream.
func (n *Noise) Rand() *rand.Rand { return n.rng }

// Split returns an independent generator seeded from this stream's output, for example the
// sampler's, so that sampling and noise never share a stream. The child is reproducible when
// the parent is.
func (n *Noise) Split() *Noise {
	var seed [32]byte
	_, _ = n.src.Read(seed[:]) // ChaCha8.Read never fails
	return newNoise(seed, n.reproducible)
}

// AddGaussian adds independent N(0, std²) noise to every element of dst. std = 0 leaves dst
// unchanged; a negative, NaN or infinite std panics.
//
// The noise is drawn in float64 with 53 bits per ziggurat layer, added to the element in
// float64, and the sum is rounded to the public grid Δ·Z, Δ = 2^(⌊log₂ std⌋ − 20), before it is
// stored as float32: so that no released value rules out another input (noise_grid.go gives
// the construction and its argument). The vector is filled in chunks of 64Ki elements, each
// from a keystream keyed by this stream, in parallel on up to GOMAXPROCS goroutines.
func (n *Noise) AddGaussian(dst []float32, std float64) {
	checkStd(std)
	if std == 0 || len(dst) == 0 {
		return
	}
	n.addScaled(dst, std, 1)
}

// AddGaussianScaled sets every element of dst to (dst[i] + std·Z_i)·scale with independent
// standard normal Z_i, in one pass over dst, and reports whether every result is finite. The
// noisy sum dst[i] + std·Z_i is rounded to AddGaussian's release grid (fixed by std) and to
// float32 before it is scaled. It
// draws the same stream and gives the same float32 results as AddGaussian followed by
// multiplying each element (converted to float64) by scale, but reads and writes dst once:
// the noise and the 1/batch scaling of a DP step cost one pass over the parameters, split
// across goroutines like AddGaussian. std = 0 only scales.
func (n *Noise) AddGaussianScaled(dst []float32, std, scale float64) bool {
	checkStd(std)
	if std == 0 || len(dst) == 0 {
		return scaleChunk(dst, scale)
	}
	return n.addScaled(dst, std, scale)
}

func checkStd(std float64) {
	if !(std >= 0) || math.IsInf(std, 0) {
		panic(fmt.Sprintf("optim: Gaussian noise standard deviation %v is not a finite non-negative number", std))
	}
}

// addScaled is AddGaussianScaled for std > 0 and a non-empty dst. Every chunk of chunkSize
// coordinates gets its own keystream key of 32 bytes from the stream, so the output depends on
// the stream and the length only, never on the number of workers.
func (n *Noise) addScaled(dst []float32, std, scale float64) bool {
	chunks := (len(dst) + chunkSize - 1) / chunkSize
	keys := make([][32]byte, chunks)
	for i := range keys {
		_, _ = n.src.Read(keys[i][:])
	}
	workers := min(n.workers, chunks)
	for len(n.pool) < workers {
		n.pool = append(n.pool, new(keystream))
	}
	finite := make([]bool, workers)
	g := gridFor(std)
	run := func(w int) {
		src, ok := n.pool[w], true
		for c := w; c < chunks; c += workers {
			src.reset(&keys[c])
			ok = addNormal(src, dst[c*chunkSize:min((c+1)*chunkSize, len(dst))], std, scale, &g) && ok
		}
		clear(src.buf[:])
		finite[w] = ok
	}
	if workers == 1 {
		run(0)
	} else {
		var wg sync.WaitGroup
		for w := range workers {
			wg.Add(1)
			go func() {
				defer wg.Done()
				run(w)
			}()
		}
		wg.Wait()
	}
	for i := range keys {
		keys[i] = [32]byte{}
	}
	for _, ok := range finite {
		if !ok {
			return false
		}
	}
	return true
}

// scaleChunk multiplies every element of g by s (in float64, rounded to float32) and reports
// whether every result is finite.
func scaleChunk(g []float32, s float64) bool {
	var chk float32 // stays 0 unless some x is NaN or infinite (x−x is then NaN)
	for i, v := range g {
		x := float32(float64(v) * s)
		g[i] = x
		chk += x - x
	}
	return chk == 0
}

// FillGaussian sets every element of dst to an independent N(0, std²) draw.
func (n *Noise) FillGaussian(dst []float32, std float64) {
	clear(dst)
	n.AddGaussian(dst, std)
}

// noiseStateMagic opens a marshalled Noise, so that other bytes are refused.
const noiseStateMagic = "dptrain/optim noise v1:"

// MarshalBinary implements encoding.BinaryMarshaler for a reproducible (seeded) stream: the
// bytes fix every later draw, so a seeded run restored with UnmarshalBinary resumes with the
// same noise, mixing weights and, through Rand, the same choices as if it had never stopped.
// Streams derived earlier by Split are separate and must be saved on their own.
//
// It refuses a secure stream from NewNoise: anyone holding its state could predict the noise of
// every later step and subtract it from the released model. A resumed secure run draws a fresh
// stream with NewNoise, which is as private as the original one.
func (n *Noise) MarshalBinary() ([]byte, error) {
	if n.src == nil {
		return nil, errors.New("optim: the noise stream is not initialised: create it with NewNoise or NewSeededNoise")
	}
	if !n.reproducible {
		return nil, errors.New("optim: refusing to save a secure noise stream: whoever reads its state can predict the noise of every later step; on resume draw a fresh stream with NewNoise")
	}
	return n.src.AppendBinary([]byte(noiseStateMagic))
}

// UnmarshalBinary implements encoding.BinaryUnmarshaler: it replaces n's stream by the one
// MarshalBinary saved, which continues where the saved stream stopped; a *rand.Rand obtained
// from n.Rand before follows it. The result is reproducible. A zero Noise may be used:
// var n optim.Noise; err := n.UnmarshalBinary(b).
func (n *Noise) UnmarshalBinary(data []byte) error {
	rest, ok := bytes.CutPrefix(data, []byte(noiseStateMagic))
	if !ok {
		return errors.New("optim: the bytes are not a saved noise stream (MarshalBinary's output): the checkpoint is damaged or from another program")
	}
	src := new(rand.ChaCha8)
	if err := src.UnmarshalBinary(rest); err != nil {
		return fmt.Errorf("optim: the saved noise stream is damaged: %w", err)
	}
	if n.src == nil {
		*n = *newNoiseFrom(src, true)
		return nil
	}
	*n.src = *src // generators from n.Rand() follow the restored stream
	n.reproducible = true
	return nil
}
