package sweep

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"gopkg.in/yaml.v3"
)

// SeedAxis is the axis name that Collect averages over (accuracy mean ± std over seeds).
const SeedAxis = "seed"

// EpsilonAxis is the name of an axis whose values set the target ε (privacy.target_epsilon):
// the accuracy plot joins the groups that differ only on it into one line per accounting mode,
// so that each algorithm (each value of the other axes) is one line of accuracy against ε.
const EpsilonAxis = "epsilon"

// Suite is a benchmark grid, as read from a YAML file.
type Suite struct {
	// Name labels the suite in tables and plots.
	Name string `yaml:"name"`
	// Description is printed above the collected table.
	Description string `yaml:"description"`
	// Config is the base config of every cell, unless a value of an axis names its own: a path
	// relative to the suite file, or an absolute one.
	Config string `yaml:"config"`
	// Set holds --set overrides applied to every cell, before the axes' own.
	Set []string `yaml:"set"`
	// Axes are the grid's dimensions; cells are their cartesian product, the first axis
	// varying slowest.
	Axes []Axis `yaml:"axes"`
	// Seeds, when given, adds a last axis named "seed" that sets the config's seed.
	Seeds []uint64 `yaml:"seeds"`
	// References are published numbers printed beside the cells they describe (the paper's
	// accuracy for a setting, for example).
	References []Reference `yaml:"references"`

	dir string // the suite file's directory: config paths are relative to it
}

// Axis is one dimension of the grid.
type Axis struct {
	Name   string  `yaml:"name"`
	Values []Value `yaml:"values"`
}

// Value is one point of an axis: a label, optionally a base config, and --set overrides.
type Value struct {
	Label string `yaml:"label"`
	// Config (relative to the suite file, or absolute) replaces the suite's base config for
	// this cell.
	Config string   `yaml:"config"`
	Set    []string `yaml:"set"`
	// Unavailable, when set, keeps the value in the grid but runs none of its cells: the
	// reason is listed in the plan and in the collected table (for example an algorithm that
	// is not in the framework yet).
	Unavailable string `yaml:"unavailable"`
}

// Reference is a published result for the cells whose labels match Where (axis name → label;
// axes not named match any label).
type Reference struct {
	Where map[string]string `yaml:"where"`
	Value string            `yaml:"value"`
}

// LoadSuite reads and checks a suite file.
func LoadSuite(path string) (*Suite, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("suite: %w", err)
	}
	s := new(Suite)
	dec := yaml.NewDecoder(bytes.NewReader(b))
	dec.KnownFields(true)
	if err := dec.Decode(s); err != nil {
		return nil, fmt.Errorf("suite %s: %w", path, err)
	}
	s.dir = filepath.Dir(path)
	if len(s.Seeds) > 0 {
		ax := Axis{Name: SeedAxis}
		for _, sd := range s.Seeds {
			v := strconv.FormatUint(sd, 10)
			ax.Values = append(ax.Values, Value{Label: v, Set: []string{"seed=" + v}})
		}
		s.Axes = append(s.Axes, ax)
	}
	if err := s.check(); err != nil {
		return nil, fmt.Errorf("suite %s: %w", path, err)
	}
	return s, nil
}

func (s *Suite) check() error {
	if s.Name == "" {
		return fmt.Errorf("name is empty: give the suite a name")
	}
	if len(s.Axes) == 0 {
		return fmt.Errorf("no axes: list at least one axis with values (or seeds)")
	}
	names := map[string]bool{}
	for _, a := range s.Axes {
		if a.Name == "" || names[a.Name] {
			return fmt.Errorf("axis name %q is empty or repeated", a.Name)
		}
		names[a.Name] = true
		if len(a.Values) == 0 {
			return fmt.Errorf("axis %s has no values", a.Name)
		}
		labels := map[string]bool{}
		for _, v := range a.Values {
			if v.Label == "" || labels[v.Label] || strings.ContainsAny(v.Label, "/\\ \t") {
				return fmt.Errorf("axis %s: label %q is empty, repeated or holds a slash or space", a.Name, v.Label)
			}
			labels[v.Label] = true
		}
	}
	for _, r := range s.References {
		for axis := range r.Where {
			if !names[axis] {
				return fmt.Errorf("reference %q: where names axis %s, which the suite does not have", r.Value, axis)
			}
		}
	}
	return nil
}

// Cell is one run of the grid.
type Cell struct {
	Index int `json:"index"`
	// ID is the cell's labels joined by "_", in axis order.
	ID string `json:"id"`
	// Labels holds the label of each axis, in axis order.
	Labels []Label `json:"labels"`
	// Config is the base config file; Set the overrides, suite-wide first then per axis.
	Config      string   `json:"base_config,omitempty"`
	Set         []string `json:"set,omitempty"`
	Unavailable string   `json:"unavailable,omitempty"`
	// Reference is the published result for this cell's setting, if the suite gives one.
	Reference string `json:"reference,omitempty"`
}

// Label is an axis name and the cell's value on it.
type Label struct {
	Axis  string `json:"axis"`
	Value string `json:"value"`
}

// Cells expands the grid, the first axis varying slowest.
func (s *Suite) Cells() []Cell {
	var cells []Cell
	var walk func(i int, c Cell)
	walk = func(i int, c Cell) {
		if i == len(s.Axes) {
			c.Index = len(cells)
			ids := make([]string, len(c.Labels))
			for k, l := range c.Labels {
				ids[k] = l.Value
			}
			c.ID = strings.Join(ids, "_")
			c.Reference = s.reference(c)
			cells = append(cells, c)
			return
		}
		for _, v := range s.Axes[i].Values {
			n := c
			n.Labels = append(append([]Label(nil), c.Labels...), Label{s.Axes[i].Name, v.Label})
			n.Set = append(append([]string(nil), c.Set...), v.Set...)
			if v.Config != "" {
				n.Config = s.path(v.Config)
			}
			if v.Unavailable != "" && n.Unavailable == "" {
				n.Unavailable = v.Unavailable
			}
			walk(i+1, n)
		}
	}
	base := Cell{Set: append([]string(nil), s.Set...)}
	if s.Config != "" {
		base.Config = s.path(s.Config)
	}
	walk(0, base)
	return cells
}

// path resolves a config path of the suite: an absolute path stays as it is, a relative one is
// relative to the suite file's directory.
func (s *Suite) path(config string) string {
	if filepath.IsAbs(config) {
		return filepath.Clean(config)
	}
	return filepath.Join(s.dir, config)
}

// Label returns the cell's value on axis, or "".
func (c Cell) Label(axis string) string {
	for _, l := range c.Labels {
		if l.Axis == axis {
			return l.Value
		}
	}
	return ""
}

// reference joins the values of the references that match the cell.
func (s *Suite) reference(c Cell) string {
	var vs []string
	for _, r := range s.References {
		match := true
		for axis, label := range r.Where {
			match = match && c.Label(axis) == label
		}
		if match {
			vs = append(vs, r.Value)
		}
	}
	return strings.Join(vs, "; ")
}
