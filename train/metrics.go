package train

import (
	"bufio"
	"bytes"
	"encoding/csv"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"strconv"

	"github.com/dptrain/dptrain/data"
	"github.com/dptrain/dptrain/train/rundir"
)

// MetricsWriter appends one record per step to MetricsJSONL and MetricsCSV in a directory (a
// run's rundir.PrivatePath: the training loss, accuracy and batch size are not covered by the
// guarantee). Each line is written whole and flushed, so a crash loses at most the line being
// written; on resume, lines past the checkpoint's step are dropped (the files are rewritten
// atomically) so the metrics match the restored state.
type MetricsWriter struct {
	modes      []string
	jsonl, csv *os.File
	jw         *bufio.Writer
	cw         *csv.Writer
	every      int
}

// metricsLine is one JSONL record.
type metricsLine struct {
	Step         int           `json:"step"`
	Epoch        float64       `json:"epoch"`
	BatchSize    int           `json:"batch_size"`
	Loss         float64       `json:"loss"`
	Accuracy     float64       `json:"accuracy"`
	LearningRate float64       `json:"learning_rate"`
	ElapsedSec   float64       `json:"elapsed_s"`
	NonFinite    int           `json:"non_finite,omitempty"`
	Privacy      []ModeEpsilon `json:"privacy,omitempty"`
	Test         *Evaluation   `json:"test,omitempty"`
}

// OpenMetrics opens (or, when resumeStep > 0, truncates to resumeStep and reopens) the metrics
// files in dir. modes fixes the CSV's ε columns. Records are written every `every` steps (1:
// every step) and whenever a step carries an evaluation.
func OpenMetrics(dir string, modes []string, resumeStep, every int) (*MetricsWriter, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	if every < 1 {
		every = 1
	}
	jpath, cpath := filepath.Join(dir, rundir.MetricsJSONL), filepath.Join(dir, rundir.MetricsCSV)
	if resumeStep > 0 {
		if err := truncateMetrics(jpath, cpath, resumeStep); err != nil {
			return nil, err
		}
	}
	flags := os.O_CREATE | os.O_WRONLY | os.O_APPEND
	if resumeStep == 0 {
		flags |= os.O_TRUNC
	}
	jf, err := os.OpenFile(jpath, flags, 0o644)
	if err != nil {
		return nil, err
	}
	cf, err := os.OpenFile(cpath, flags, 0o644)
	if err != nil {
		jf.Close()
		return nil, err
	}
	m := &MetricsWriter{modes: modes, jsonl: jf, csv: cf, jw: bufio.NewWriter(jf), cw: csv.NewWriter(cf), every: every}
	if st, err := cf.Stat(); err == nil && st.Size() == 0 {
		header := []string{"step", "epoch", "batch_size", "loss", "accuracy", "learning_rate", "elapsed_s", "test_loss", "test_accuracy"}
		for _, mode := range modes {
			header = append(header, "epsilon_"+mode)
		}
		m.cw.Write(header)
		m.cw.Flush()
	}
	return m, nil
}

// AfterStep implements Hook.
func (m *MetricsWriter) AfterStep(s *StepInfo) error {
	if s.Step%m.every != 0 && s.Test == nil && s.Step != s.TotalSteps {
		return nil
	}
	line := metricsLine{s.Step, s.Epoch, s.BatchSize, s.Loss, s.Accuracy, s.LearningRate, s.ElapsedSec, s.NonFinite, s.Privacy, s.Test}
	b, err := json.Marshal(line)
	if err != nil {
		return fmt.Errorf("metrics: %w", err)
	}
	m.jw.Write(b)
	m.jw.WriteByte('\n')
	if err := m.jw.Flush(); err != nil {
		return fmt.Errorf("metrics: %w", err)
	}
	row := []string{strconv.Itoa(s.Step), ff(s.Epoch), strconv.Itoa(s.BatchSize), ff(s.Loss), ff(s.Accuracy), ff(s.LearningRate), ff(s.ElapsedSec), "", ""}
	if s.Test != nil {
		row[7], row[8] = ff(s.Test.Loss), ff(s.Test.Accuracy)
	}
	for _, mode := range m.modes {
		v := ""
		for _, p := range s.Privacy {
			if p.Mode == mode && p.Error == "" {
				v = ff(p.Epsilon)
			}
		}
		row = append(row, v)
	}
	m.cw.Write(row)
	m.cw.Flush()
	return m.cw.Error()
}

// Close flushes and closes the files.
func (m *MetricsWriter) Close() error {
	m.jw.Flush()
	m.cw.Flush()
	return errors.Join(m.jsonl.Close(), m.csv.Close())
}

func ff(v float64) string {
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return strconv.FormatFloat(v, 'g', -1, 64)
	}
	return strconv.FormatFloat(v, 'g', 8, 64)
}

// truncateMetrics keeps the records with step ≤ last, rewriting each file atomically.
func truncateMetrics(jpath, cpath string, last int) error {
	if b, err := os.ReadFile(jpath); err == nil {
		var keep [][]byte
		for _, l := range bytes.Split(b, []byte{'\n'}) {
			var rec struct{ Step int }
			if json.Unmarshal(l, &rec) == nil && rec.Step <= last {
				keep = append(keep, l)
			}
		}
		if err := data.WriteFileAtomic(jpath, func(w io.Writer) error {
			for _, l := range keep {
				w.Write(l)
				if _, err := w.Write([]byte{'\n'}); err != nil {
					return err
				}
			}
			return nil
		}); err != nil {
			return err
		}
	}
	if b, err := os.ReadFile(cpath); err == nil {
		keep := completeCSVRows(b, last)
		return data.WriteFileAtomic(cpath, func(w io.Writer) error {
			for _, l := range keep {
				w.Write(l)
				if _, err := w.Write([]byte{'\n'}); err != nil {
					return err
				}
			}
			return nil
		})
	}
	return nil
}

// completeCSVRows returns the header and the rows with step ≤ last of a metrics.csv, dropping
// a torn last line (a write cut by a full disk or a kill) and any row that does not parse
// with the header's number of fields.
func completeCSVRows(b []byte, last int) [][]byte {
	lines := bytes.Split(b, []byte{'\n'})
	lines = lines[:len(lines)-1] // the part after the last newline is incomplete (or empty)
	if len(lines) == 0 {
		return nil
	}
	header, err := csv.NewReader(bytes.NewReader(lines[0])).Read()
	if err != nil {
		return nil
	}
	keep := [][]byte{lines[0]}
	for _, l := range lines[1:] {
		r := csv.NewReader(bytes.NewReader(l))
		r.FieldsPerRecord = len(header)
		row, err := r.Read()
		if err != nil {
			continue
		}
		if s, err := strconv.Atoi(row[0]); err != nil || s > last {
			continue
		}
		keep = append(keep, l)
	}
	return keep
}
