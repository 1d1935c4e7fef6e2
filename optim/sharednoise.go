package optim

import (
	crand "crypto/rand"
	"fmt"
)

// NewNoiseKey returns 32 bytes from crypto/rand for NewSharedNoise.
func NewNoiseKey() ([32]byte, error) {
	var key [32]byte
	if _, err := crand.Read(key[:]); err != nil {
		return key, fmt.Errorf("optim: reading a key from crypto/rand: %w", err)
	}
	return key, nil
}

// NewSharedNoise returns the secure generator keyed by key: the ranks of a data-parallel run
// build it from one key (drawn by NewNoiseKey on rank 0 and sent only to the other ranks), so
// that they draw identical noise and sampling, and the noise is added once to the released sum
// (the placement of JAX Privacy, whose replicas share a key). The key is as secret as the
// noise: it never leaves the ranks' memory. Reproducible reports false.
func NewSharedNoise(key [32]byte) *Noise { return newNoise(key, false) }
