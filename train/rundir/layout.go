package rundir

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/dptrain/dptrain/data"
)

// A run directory has two parts. At the top, the public artefacts: the final model
// (ModelFile), the summary with ε per mode and the test-set evaluation (SummaryFile) and the
// config (ConfigFile). In PrivateDir, the operator's files that the privacy guarantee does
// not cover: the per-step metrics (training loss and accuracy on private batches, the
// realised batch size) and the checkpoints (intermediate iterates, which void hidden-state
// guarantees). Every reader and writer of a run directory finds them through PrivatePath.

// PrivateDir is the subdirectory of a run directory that holds its operator-only files.
const PrivateDir = "private"

// Files in a run's PrivateDir.
const (
	MetricsJSONL  = "metrics.jsonl"
	MetricsCSV    = "metrics.csv"
	PrivateReadme = "README.txt"
)

// PrivatePath is the path of name (a file of the operator's, such as MetricsJSONL or
// CheckpointFile) in the run directory runDir; with no name, the private directory itself.
func PrivatePath(runDir string, name ...string) string {
	return filepath.Join(append([]string{runDir, PrivateDir}, name...)...)
}

// privateReadme is the text of PrivateReadme.
var privateReadme = fmt.Sprintf(`The files in this directory are for the operator of the run only. They are NOT covered by
the run's differential-privacy guarantee and must not be published: the per-step metrics
(%s, %s) hold the training loss, the accuracy on private batches and the
realised (un-noised) batch size; the checkpoints (checkpoint-<step>.dpt, %s) hold
intermediate iterates. %s is the run's privacy ledger: every private step ever executed
on the data, on every branch of the run; ε is computed from it, so never shorten, edit or
delete it: its lines are chained by hash and checked against every checkpoint, and a run
whose ledger is damaged is not resumed. Keep a backup of it with the run.
%s holds a seeded run's seed, from which every batch and noise draw can be regenerated.
The files that may be published are in the directory above:
%s, %s (ε per accounting mode, test evaluation) and %s.
`, MetricsJSONL, MetricsCSV, CheckpointFile, LedgerFile, SeedFile, ModelFile, SummaryFile, ConfigFile)

// PublishLine is the one line `dptrain train` prints about which of a run's files may be
// published and which are the operator's.
func PublishLine(runDir string) string {
	return fmt.Sprintf("safe to publish: %s, %s and %s in %s (ε per mode, test evaluation); operator only, not covered by the guarantee: everything in %s (metrics of private batches, checkpoints, the privacy ledger, timing)",
		ModelFile, SummaryFile, ConfigFile, runDir, PrivatePath(runDir)+string(filepath.Separator))
}

// MakePrivateDir creates the run's private directory and its README.
func MakePrivateDir(runDir string) error {
	if err := os.MkdirAll(PrivatePath(runDir), 0o700); err != nil {
		return err
	}
	return data.WriteFileAtomic(PrivatePath(runDir, PrivateReadme), func(w io.Writer) error {
		_, err := io.WriteString(w, privateReadme)
		return err
	})
}

// LegacyLayout returns an error when runDir holds operator files at its top level, where a
// dptrain before the private/ directory wrote them, and none in PrivatePath: such a run is
// not resumed (nor overwritten) until its files are moved.
func LegacyLayout(runDir string) error {
	if _, err := os.Stat(PrivatePath(runDir, CheckpointFile)); err == nil {
		return nil
	}
	var found []string
	for _, pat := range []string{CheckpointFile, StepCheckpointGlob, MetricsJSONL, MetricsCSV} {
		m, _ := filepath.Glob(filepath.Join(runDir, pat))
		found = append(found, m...)
	}
	if !slices.Contains(found, filepath.Join(runDir, CheckpointFile)) {
		return nil
	}
	return fmt.Errorf("%s was written by an older dptrain: its checkpoints and metrics are at the top of the run directory, where they could be published with the model. Move them into %s and run again: mkdir -p %s && mv %s %s",
		runDir, PrivatePath(runDir), PrivatePath(runDir), strings.Join(found, " "), PrivatePath(runDir)+string(filepath.Separator))
}
