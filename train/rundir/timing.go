package rundir

import (
	"encoding/json"
	"fmt"
	"io"
	"os"

	"github.com/dptrain/dptrain/data"
)

// TimingFile holds a run's timing in its PrivateDir.
const TimingFile = "timing.json"

// Timing is a run's timing, operator-only (train.Summary.WallSec).
type Timing struct {
	WallSec   float64 `json:"wall_s"`
	MsPerStep float64 `json:"ms_per_step"`
	BLAS      string  `json:"blas"`
}

// WriteTiming writes tm to runDir's TimingFile.
func WriteTiming(runDir string, tm Timing) error {
	return data.WriteFileAtomic(PrivatePath(runDir, TimingFile), func(w io.Writer) error {
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		return enc.Encode(tm)
	})
}

// ReadTiming reads the timing of the run in runDir (from its private/ directory).
func ReadTiming(runDir string) (*Timing, error) {
	b, err := os.ReadFile(PrivatePath(runDir, TimingFile))
	if err != nil {
		return nil, err
	}
	tm := new(Timing)
	if err := json.Unmarshal(b, tm); err != nil {
		return nil, fmt.Errorf("%s: %w", PrivatePath(runDir, TimingFile), err)
	}
	return tm, nil
}
