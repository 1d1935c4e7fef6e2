package train

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/dptrain/dptrain/data"
	"github.com/dptrain/dptrain/ledger"
	"github.com/dptrain/dptrain/models"
	"github.com/dptrain/dptrain/optim"
	"github.com/dptrain/dptrain/train/config"
	"github.com/dptrain/dptrain/train/rundir"
)

// snapshotCheckpoint collects the run's state after step: the session's (parameters,
// optimizer, sampler, seeded streams, ledger) with the run's identity and the average of the
// iterates.
func (t *Trainer) snapshotCheckpoint(step int) (*rundir.Checkpoint, error) {
	sc, err := t.sess.Checkpoint()
	if err != nil {
		return nil, err
	}
	c := &rundir.Checkpoint{
		Header: rundir.CheckpointHeader{Step: step, ConfigHash: t.hash, Config: t.canon, NoiseMultiplier: t.sigma,
			ElapsedSec: t.elapsed(), Ledger: sc.Ledger, Sampler: sc.Sampler, Streams: sc.Streams, State: sc.OptimizerScalars},
		Vectors: map[string][]float32{"params": sc.Params},
	}
	if t.ledger != nil {
		c.Header.LedgerLines, c.Header.LedgerHead = t.ledger.Lines(), t.ledger.Head()
	}
	for k, v := range sc.OptimizerVectors {
		c.Vectors["optim/"+k] = v
	}
	if t.ema != nil {
		c.Vectors["ema"] = t.ema.avg
	}
	return c, nil
}

// restore loads the checkpoint at path into the model, the optimizer and the accountants, and
// returns the number of steps it had completed.
func (t *Trainer) restore(path string) (int, error) {
	c, err := rundir.LoadCheckpoint(path)
	if err != nil {
		return 0, withFallbacks(err, path)
	}
	if c.Header.ConfigHash != t.hash {
		if err := t.acceptChanges(path, c.Header); err != nil {
			return 0, err
		}
	}
	return t.apply(c, path)
}

// apply puts the run in the state checkpoint c (read from path) holds.
func (t *Trainer) apply(c *rundir.Checkpoint, path string) (int, error) {
	if c.Header.NoiseMultiplier != t.sigma {
		return 0, fmt.Errorf("checkpoint %s was written with noise multiplier %g, this run has %g: resume with the same config", path, c.Header.NoiseMultiplier, t.sigma)
	}
	if c.Header.Sampler != nil {
		if err := t.sampler.UnmarshalBinary(c.Header.Sampler); err != nil {
			return 0, fmt.Errorf("checkpoint %s: %w", path, err)
		}
	} else if s := t.sampler.Scheme(); t.live != nil && (s == data.SchemeShuffled || s == data.SchemeShuffledOnce) {
		return 0, fmt.Errorf("checkpoint %s holds no batch partition (it was written by an older dptrain), and a new partition would change the privacy analysis of this %s run: restart the run", path, s)
	}
	p := c.Vectors["params"]
	if len(p) != len(t.model.Params()) {
		return 0, fmt.Errorf("checkpoint %s holds %d parameters, the model has %d", path, len(p), len(t.model.Params()))
	}
	// A non-finite parameter would make the first step fail as a divergence, with advice
	// about the learning rate that does not apply to a damaged file.
	if err := models.CheckFinite(p, "the checkpoint "+path); err != nil {
		return 0, withFallbacks(err, path)
	}
	copy(t.model.Params(), p)
	if s, ok := t.opt.(optim.Checkpointer); ok {
		vecs := map[string][]float32{}
		for k, v := range c.Vectors {
			if len(k) > 6 && k[:6] == "optim/" {
				vecs[k[6:]] = v
			}
		}
		if err := s.Restore(vecs, c.Header.State); err != nil {
			return 0, fmt.Errorf("checkpoint %s: %w", path, err)
		}
	} else if c.Header.Step > 0 {
		return 0, fmt.Errorf("optimizer %T cannot restore its state, so the run cannot be resumed exactly", t.opt)
	}
	if t.cfg.Seed != nil && c.Header.Streams != nil {
		for name, n := range map[string]*optim.Noise{"noise": t.noise, "sampler": t.samplerNoise} {
			if err := n.UnmarshalBinary(c.Header.Streams[name]); err != nil {
				return 0, fmt.Errorf("checkpoint %s: %s stream: %w", path, name, err)
			}
		}
	}
	// The accountants are fed from the run's ledger file (Run), which holds every step
	// ever executed and must reach the head the checkpoint recorded; the checkpoint's copy of
	// the records is never composed.
	if err := t.ema.restore(c.Vectors["ema"], path); err != nil {
		return 0, err
	}
	t.resumed = &ledger.Anchor{Lines: c.Header.LedgerLines, Head: c.Header.LedgerHead, From: path}
	if c.Header.Step > t.total {
		return 0, fmt.Errorf("checkpoint %s is at step %d, beyond this run's %d planned steps: raise training.steps (or training.epochs) to continue", path, c.Header.Step, t.total)
	}
	t.elapsedBefore = c.Header.ElapsedSec
	return c.Header.Step, nil
}

// acceptChanges decides whether a run whose config differs from the checkpoint's may resume
// it: never when a Fixed key changed; with Options.AllowChanges when only Changeable keys did,
// which are then logged and recorded in the summary.
func (t *Trainer) acceptChanges(path string, h rundir.CheckpointHeader) error {
	if h.Config == nil {
		return fmt.Errorf("checkpoint %s was written by a run with a different config (hash %s, this config %s) by an older dptrain that did not record the config's keys: resume with the run's own config.yaml, or start a new run in another output.dir",
			path, h.ConfigHash, t.hash)
	}
	changes := t.canon.Diff(h.Config, t.cfg, t.algs)
	var fixed, changeable []string
	for _, c := range changes {
		if c.Kind == config.Fixed {
			fixed = append(fixed, c.String())
		} else {
			changeable = append(changeable, c.String())
		}
	}
	seedFile := rundir.PrivatePath(t.cfg.Output.Dir, rundir.SeedFile)
	if seed, ok := h.Config["seed"]; ok && t.cfg.Seed == nil {
		if _, err := os.Stat(seedFile); os.IsNotExist(err) {
			// A seeded run keeps its seed in private/, not in its public config.yaml.
			return fmt.Errorf("checkpoint %s was written by a seeded run (seed %s), and its seed file %s is missing: put it back (it holds the line \"seed: %s\") or pass --set seed=%s to resume the run",
				path, seed, seedFile, seed, seed)
		}
	}
	switch {
	case len(fixed) > 0:
		return fmt.Errorf("checkpoint %s was written with a different config; these keys change the privacy accounting or the data and must match to resume:\n  %s\nresume with the run's own config (%s in the run directory), or start a new run in another output.dir",
			path, strings.Join(fixed, "\n  "), rundir.ConfigFile)
	case len(changeable) > 0 && !t.opts.AllowChanges:
		return fmt.Errorf("checkpoint %s was written with a different config:\n  %s\nthese keys do not change the privacy accounting: pass --allow-changes to resume with them, or resume with the run's own %s",
			path, strings.Join(changeable, "\n  "), rundir.ConfigFile)
	}
	for _, c := range changeable {
		t.log.Warnf("resuming with a changed config key (--allow-changes): %s", c)
	}
	t.changes = changeable
	return nil
}

// withFallbacks adds to err, the error of the checkpoint at path, the run's other checkpoints
// to continue from. The newest step file is a hard link to checkpoint.dpt: the same damaged
// file under another name is not offered.
func withFallbacks(err error, path string) error {
	var older []string
	fi, ferr := os.Stat(path)
	for _, o := range rundir.OlderCheckpoints(filepath.Dir(path)) {
		if o == path {
			continue
		}
		if oi, err := os.Stat(o); err != nil || ferr == nil && os.SameFile(fi, oi) {
			continue
		}
		older = append(older, o)
	}
	if len(older) == 0 {
		return fmt.Errorf("%w\nthe run has no other checkpoint to continue from", err)
	}
	return fmt.Errorf("%w\nolder checkpoints of this run (newest first): %s\ncontinue from one with --resume --resume-from FILE", err, strings.Join(older, ", "))
}
