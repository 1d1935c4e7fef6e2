package train

// Summary is the outcome of a run, printed by `dptrain train` (as JSON with --json) and written
// to summary.json in the output directory.
type Summary struct {
	Name            string        `json:"name"`
	Algorithm       string        `json:"algorithm"`
	Dataset         string        `json:"dataset"`
	Model           string        `json:"model"`
	TestAccuracy    float64       `json:"test_accuracy"`
	TestLoss        float64       `json:"test_loss"`
	Steps           int           `json:"steps"`
	PlannedSteps    int           `json:"planned_steps"`
	Epochs          float64       `json:"epochs"`
	SampleRate      float64       `json:"sample_rate"`
	BatchSize       int           `json:"batch_size"`
	DatasetSize     int           `json:"dataset_size"`
	NoiseMultiplier float64       `json:"noise_multiplier"`
	ClipNorm        float64       `json:"clip_norm"`
	Delta           float64       `json:"delta,omitempty"`
	TargetEpsilon   float64       `json:"target_epsilon,omitempty"`
	Epsilon         []ModeEpsilon `json:"epsilon"`
	// LedgerSteps is the number of private steps ever executed on the run's data, on every
	// branch of the run (its private/ledger.jsonl): ε counts all of them. AbandonedSteps is
	// how many of them are not on the final model's trajectory (resumes from older
	// checkpoints, crashes after the last checkpoint); Rewind says so in words.
	LedgerSteps    int    `json:"ledger_steps,omitempty"`
	AbandonedSteps int    `json:"abandoned_steps,omitempty"`
	Rewind         string `json:"rewind,omitempty"`
	// TargetBound is set when a paper or approximate accountant governed stopping and
	// calibration: the target was met under that bound, next to the run's certified ε.
	TargetBound string `json:"target_bound,omitempty"`
	// StoppedEarly says why the run ended before its planned steps (for example the next
	// step would have exceeded the target ε); empty when it ran to the end.
	StoppedEarly string `json:"stopped_early,omitempty"`
	// Interrupted is set when a signal (SIGINT, SIGTERM) stopped the run: it saved a
	// checkpoint and can continue with --resume.
	Interrupted bool `json:"interrupted,omitempty"`
	// ChangedOnResume lists the config keys changed when the run was resumed with
	// --allow-changes, as "key: old → new".
	ChangedOnResume []string `json:"changed_on_resume,omitempty"`
	// WallSec is the training time over every session of the run (resumes included).
	WallSec      float64 `json:"wall_s"`
	MsPerStep    float64 `json:"ms_per_step"`
	Reproducible bool    `json:"reproducible"`
	BLAS         string  `json:"blas"`
	ModelFile    string  `json:"model_file"`
	OutputDir    string  `json:"output_dir"`
	// ConfigFile is the run's saved config, the one to resume it with.
	ConfigFile string `json:"config_file"`
}
