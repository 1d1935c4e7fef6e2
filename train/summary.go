package train

import (
	"fmt"
	"strings"

	"github.com/dptrain/dptrain/accounting"
	"github.com/dptrain/dptrain/accounting/modes"
)

// Summary is the outcome of a run, printed by `dptrain train` (as JSON with --json) and written
// to summary.json in the output directory.
type Summary struct {
	Name            string  `json:"name"`
	Algorithm       string  `json:"algorithm"`
	Dataset         string  `json:"dataset"`
	Model           string  `json:"model"`
	TestAccuracy    float64 `json:"test_accuracy"`
	TestLoss        float64 `json:"test_loss"`
	Steps           int     `json:"steps"`
	PlannedSteps    int     `json:"planned_steps"`
	Epochs          float64 `json:"epochs"`
	SampleRate      float64 `json:"sample_rate"`
	BatchSize       int     `json:"batch_size"`
	DatasetSize     int     `json:"dataset_size"`
	NoiseMultiplier float64 `json:"noise_multiplier"`
	ClipNorm        float64 `json:"clip_norm"`
	// Lipschitz is set for an algorithm that clips nothing (DP-SGLD, clip_norm 0): the
	// declared Lipschitz constant L of the loss, which bounds a gradient as C would.
	Lipschitz     float64       `json:"lipschitz,omitempty"`
	Delta         float64       `json:"delta,omitempty"`
	TargetEpsilon float64       `json:"target_epsilon,omitempty"`
	Epsilon       []ModeEpsilon `json:"epsilon"`
	// StopAccountant is the mode whose ε governed stopping and calibration
	// (privacy.stop_accountant, resolved).
	StopAccountant string `json:"stop_accountant,omitempty"`
	// LedgerSteps is the number of private steps ever executed on the run's data, on every
	// branch of the run (its private/ledger.jsonl): ε counts all of them. AbandonedSteps is
	// how many of them are not on the final model's trajectory (resumes from older
	// checkpoints, crashes after the last checkpoint); Rewind says so in words.
	LedgerSteps    int    `json:"ledger_steps,omitempty"`
	AbandonedSteps int    `json:"abandoned_steps,omitempty"`
	Rewind         string `json:"rewind,omitempty"`
	// CertifiedEpsilon is set when no configured accountant gives a certified ε for the run
	// (for example privacy.accountants: [gdp]): the certified ε of the same run from rdp (or
	// pld), computed from its ledger, printed beside the approximate or paper one.
	CertifiedEpsilon *ModeEpsilon `json:"certified_epsilon,omitempty"`
	// PublicQuantities says which of the run's quantities are declared public: the dataset
	// size n (and the batch size and sample rate computed from it).
	PublicQuantities string `json:"public_quantities,omitempty"`
	// Held is set when the run was interrupted: its model and summary are in private/ until
	// the planned end, and why.
	Held string `json:"held,omitempty"`
	// TargetBound is set when a paper or approximate accountant governed stopping and
	// calibration: the target was met under that bound, next to the run's certified ε.
	TargetBound string `json:"target_bound,omitempty"`
	// StoppedEarly says why the run ended before its planned steps (for example the next
	// step would have exceeded the target ε); empty when it ran to the end.
	StoppedEarly string `json:"stopped_early,omitempty"`
	// Interrupted is set when a signal (SIGINT, SIGTERM) stopped the run: it saved a
	// checkpoint and can continue with --resume.
	Interrupted bool `json:"interrupted,omitempty"`
	// Ranks is the number of processes of a data-parallel run (absent for one process).
	Ranks int `json:"ranks,omitempty"`
	// EMA is training.ema: the released model is the average of the iterates with this decay.
	EMA float64 `json:"ema,omitempty"`
	// ChangedOnResume lists the config keys changed when the run was resumed with
	// --allow-changes, as "key: old → new".
	ChangedOnResume []string `json:"changed_on_resume,omitempty"`
	// WallSec is the training time over every session of the run (resumes included), and
	// MsPerStep this session's time per step. They are the operator's: a step's time depends
	// on its realised (Poisson) batch size, so they are written to private/timing.json
	// (rundir.TimingFile), never to summary.json.
	WallSec      float64 `json:"-"`
	MsPerStep    float64 `json:"-"`
	Reproducible bool    `json:"reproducible"`
	// NotPrivate is set, with the reason, when the run's outputs are not private whatever
	// its ε says: a seeded run (NotPrivateSeeded).
	NotPrivate string `json:"not_private,omitempty"`
	BLAS       string `json:"blas"`
	ModelFile  string `json:"model_file"`
	OutputDir  string `json:"output_dir"`
	// ConfigFile is the run's saved config, the one to resume it with.
	ConfigFile string `json:"config_file"`
}

// PublicQuantitiesNote is Summary.PublicQuantities, with n.
const PublicQuantitiesNote = "n = %d (dataset_size) is declared public, as the accountants assume (the sample rate q = batch_size/n is computed from it); the realised batch sizes and the timing are not, and stay in private/"

// heldNote is Summary.Held for a run interrupted after step of total steps: where its model
// and summary are kept, and which of the run's accountants (names) cover an intermediate model
// released besides the final one.
func heldNote(step, total int, model, private string, names []string, run accounting.Run) string {
	note := fmt.Sprintf("interrupted after step %d of %d: the model (%s) and this summary are kept in %s until the run reaches its planned end (resume it with --resume). An intermediate model released besides the final one is a second release", step, total, model, private)
	every, last := modes.ByRelease(names, run)
	if len(every) > 0 {
		note += fmt.Sprintf(": the ε of %s bounds every iterate, so it covers both", strings.Join(every, ", "))
	}
	if len(last) > 0 {
		sep := "; "
		if len(every) == 0 {
			sep = ": "
		}
		note += sep + "the hidden-state bound of " + strings.Join(last, ", ") + " covers the last iterate only and not this release"
	}
	return note
}
