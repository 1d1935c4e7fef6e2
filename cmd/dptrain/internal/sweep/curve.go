package sweep

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"os"

	"github.com/dptrain/dptrain/train"
)

// readCurve reads ε against steps, per accounting mode, from a run's private/metrics.jsonl (only
// ε is read: the training loss and accuracy there stay with the operator). A missing file gives
// no curve.
func readCurve(path string) (map[string][]Point, error) {
	f, err := os.Open(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	defer f.Close()
	curve := map[string][]Point{}
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<24)
	for line := 1; sc.Scan(); line++ {
		var rec struct {
			Step    int                 `json:"step"`
			Privacy []train.ModeEpsilon `json:"privacy"`
		}
		if err := json.Unmarshal(sc.Bytes(), &rec); err != nil {
			return nil, fmt.Errorf("%s:%d: %w", path, line, err)
		}
		for _, e := range rec.Privacy {
			if e.Error == "" {
				curve[e.Mode] = append(curve[e.Mode], Point{float64(rec.Step), e.Epsilon})
			}
		}
	}
	return curve, sc.Err()
}
