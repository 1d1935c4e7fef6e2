package sweep

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"text/tabwriter"

	"gopkg.in/yaml.v3"

	"github.com/dptrain/dptrain/data"
	"github.com/dptrain/dptrain/train/config"
)

// Files of a plan directory.
const (
	PlanFile   = "plan.json"
	CellsTable = "cells.tsv"
	CellsDir   = "cells"
	// ErrorFile, in a cell's directory, holds the error of its last failed attempt.
	ErrorFile = "error.txt"
	// LogFile, in a cell's directory, holds the output of its worker process.
	LogFile = "log.txt"
)

// Plan is a planned suite: every cell with its resolved config.
type Plan struct {
	Suite       string   `json:"suite"`
	Description string   `json:"description,omitempty"`
	Axes        []string `json:"axes"`
	// Set holds the overrides given at planning time (dptrain sweep plan --set), applied
	// after the suite's own.
	Set   []string `json:"set,omitempty"`
	Cells []Cell   `json:"cells"`

	dir string
}

// MakePlan resolves every cell of the suite into DIR/cells/NNN-ID/config.yaml, with output.dir
// set to the cell's run directory, and writes plan.json and cells.tsv. Every config is parsed
// and validated now, so that a typo fails the plan rather than a cell on a cluster.
func MakePlan(s *Suite, dir string, extra []string) (*Plan, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, err
	}
	p := &Plan{Suite: s.Name, Description: s.Description, Set: extra, Cells: s.Cells(), dir: abs}
	for _, a := range s.Axes {
		p.Axes = append(p.Axes, a.Name)
	}
	for i := range p.Cells {
		c := &p.Cells[i]
		c.Set = append(c.Set, extra...)
		if c.Unavailable != "" {
			continue
		}
		if c.Config == "" {
			return nil, fmt.Errorf("cell %s has no base config: set config: in the suite or on one of its axis values", c.ID)
		}
		b, err := os.ReadFile(c.Config)
		if err != nil {
			return nil, fmt.Errorf("cell %s: %w", c.ID, err)
		}
		sets := append(append([]string(nil), c.Set...), "output.dir="+p.RunDir(c.Index))
		cfg, err := config.ParseConfig(b, sets)
		if err != nil {
			return nil, fmt.Errorf("cell %s (config %s, --set %s): %w", c.ID, c.Config, strings.Join(c.Set, " "), err)
		}
		cfg.Name = s.Name + "/" + c.ID
		if err := os.MkdirAll(p.CellDir(c.Index), 0o755); err != nil {
			return nil, err
		}
		if err := data.WriteFileAtomic(p.ConfigFile(c.Index), func(w io.Writer) error { return yaml.NewEncoder(w).Encode(cfg) }); err != nil {
			return nil, err
		}
	}
	return p, p.Save()
}

// Save writes the plan's plan.json and cells.tsv (after marking a cell unavailable, for one).
func (p *Plan) Save() error {
	if err := data.WriteFileAtomic(filepath.Join(p.dir, PlanFile), func(w io.Writer) error {
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		return enc.Encode(p)
	}); err != nil {
		return err
	}
	return data.WriteFileAtomic(filepath.Join(p.dir, CellsTable), p.writeTable)
}

func (p *Plan) writeTable(w io.Writer) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintf(tw, "index\t%s\tconfig\n", strings.Join(p.Axes, "\t"))
	for _, c := range p.Cells {
		vals := make([]string, len(c.Labels))
		for i, l := range c.Labels {
			vals[i] = l.Value
		}
		where := p.ConfigFile(c.Index)
		if c.Unavailable != "" {
			where = "not yet available: " + c.Unavailable
		}
		fmt.Fprintf(tw, "%d\t%s\t%s\n", c.Index, strings.Join(vals, "\t"), where)
	}
	return tw.Flush()
}

// LoadPlan reads DIR/plan.json.
func LoadPlan(dir string) (*Plan, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, err
	}
	b, err := os.ReadFile(filepath.Join(abs, PlanFile))
	if err != nil {
		return nil, fmt.Errorf("%s is not a sweep plan (run dptrain sweep plan SUITE --out %s first): %w", dir, dir, err)
	}
	p := &Plan{dir: abs}
	if err := json.Unmarshal(b, p); err != nil {
		return nil, fmt.Errorf("%s: %w", filepath.Join(dir, PlanFile), err)
	}
	return p, nil
}

// Dir is the plan's directory (absolute).
func (p *Plan) Dir() string { return p.dir }

// CellDir is the directory of cell i.
func (p *Plan) CellDir(i int) string {
	return filepath.Join(p.dir, CellsDir, fmt.Sprintf("%03d-%s", i, p.Cells[i].ID))
}

// ConfigFile is cell i's resolved config.
func (p *Plan) ConfigFile(i int) string { return filepath.Join(p.CellDir(i), "config.yaml") }

// RunDir is cell i's output.dir.
func (p *Plan) RunDir(i int) string { return filepath.Join(p.CellDir(i), "run") }

// cell returns cell i or an error naming the valid range.
func (p *Plan) cell(i int) (Cell, error) {
	if i < 0 || i >= len(p.Cells) {
		return Cell{}, fmt.Errorf("--index %d: the plan in %s has cells 0 to %d", i, p.dir, len(p.Cells)-1)
	}
	return p.Cells[i], nil
}
