package rundir

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"gopkg.in/yaml.v3"

	"github.com/dptrain/dptrain/data"
	"github.com/dptrain/dptrain/train/config"
)

// SeedFile holds a seeded run's seed in its PrivateDir. The seed regenerates every sampling
// and noise draw of the run, so it is never written into the public config.yaml; a resume
// finds it here.
const SeedFile = "seed.yaml"

// NotPrivateSeeded is the summary's not_private reason for a seeded run.
const NotPrivateSeeded = "a seed was set: every batch and every noise draw can be regenerated from it, so the outputs are NOT private whatever ε says (ε describes the mechanism, not this run); train without seed for a release"

// seedRecord is the content of SeedFile.
type seedRecord struct {
	Seed uint64 `yaml:"seed"`
}

// WriteConfig writes the run's config to ConfigFile at the top of runDir without its seed,
// and a seeded run's seed to SeedFile in its PrivateDir.
func WriteConfig(runDir string, cfg *config.Config) error {
	pub := *cfg
	pub.Seed = nil
	if err := data.WriteFileAtomic(filepath.Join(runDir, ConfigFile), func(w io.Writer) error { return yaml.NewEncoder(w).Encode(&pub) }); err != nil {
		return err
	}
	if cfg.Seed == nil {
		return nil
	}
	return data.WriteFileAtomic(PrivatePath(runDir, SeedFile), func(w io.Writer) error {
		if _, err := io.WriteString(w, "# The seed of this run: it regenerates every batch and noise draw. Operator only.\n"); err != nil {
			return err
		}
		return yaml.NewEncoder(w).Encode(seedRecord{*cfg.Seed})
	})
}

// ReadSeed returns the seed stored in runDir's SeedFile, or nil when there is none.
func ReadSeed(runDir string) (*uint64, error) {
	b, err := os.ReadFile(PrivatePath(runDir, SeedFile))
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("seed: %w", err)
	}
	var r seedRecord
	if err := yaml.Unmarshal(b, &r); err != nil {
		return nil, fmt.Errorf("%s: %w", PrivatePath(runDir, SeedFile), err)
	}
	return &r.Seed, nil
}
