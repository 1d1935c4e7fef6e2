package datasets

import (
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"text/tabwriter"

	"github.com/dptrain/dptrain/data"
)

// Entry is one row of "dptrain data list".
type Entry struct {
	Dataset string `json:"dataset"`
	Shape   []int  `json:"shape"`
	Classes int    `json:"classes"`
	Train   int    `json:"train"`
	Test    int    `json:"test"`
	Found   bool   `json:"found"`
	Source  string `json:"source"`
	// Provenance says how the dataset differs from the one its name recalls (data.Spec).
	Provenance string `json:"provenance,omitempty"`
}

// List returns an entry for every known dataset (data.Known), with where l finds it, or, when
// it finds none, the command that downloads it.
func List(l *data.Locator) ([]Entry, error) {
	var rows []Entry
	for _, s := range data.Known() {
		e := Entry{Dataset: s.Name, Shape: s.Shape, Classes: s.Classes, Train: s.TrainSize, Test: s.TestSize, Provenance: s.Provenance}
		loc, err := l.Find(s.Name)
		switch {
		case err == nil:
			e.Found, e.Source = true, loc.String()
		case errors.Is(err, os.ErrNotExist):
			e.Source = notFound(s)
		default:
			return nil, err
		}
		rows = append(rows, e)
	}
	return rows, nil
}

// notFound says how to get the dataset s, which is not found.
func notFound(s data.Spec) string {
	switch {
	case len(s.Files) == 0:
		return "your own images: give their folder or .tar.gz (data.path in a config, --dir here)"
	case s.BaseURL == "" && s.Module.Path == "":
		return "not found (copy " + s.Files[0].Name + " into the data directory's " + s.Name + "/ folder, or set data.path)"
	}
	return "not found (dptrain data download --dataset " + s.Name + ")"
}

// WriteList writes the entries as the table of "dptrain data list", then the provenance of
// every dataset that has one.
func WriteList(w io.Writer, rows []Entry) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "DATASET\tSHAPE\tCLASSES\tTRAIN\tTEST\tWHERE")
	for _, e := range rows {
		fmt.Fprintf(tw, "%s\t%s\t%d\t%d\t%d\t%s\n", e.Dataset, shapeString(e.Shape), e.Classes, e.Train, e.Test, e.Source)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	for _, e := range rows {
		if e.Provenance != "" {
			if _, err := fmt.Fprintf(w, "%s: %s\n", e.Dataset, e.Provenance); err != nil {
				return err
			}
		}
	}
	return nil
}

// Report is what "dptrain data inspect" reports about a loaded dataset.
type Report struct {
	Dataset       string   `json:"dataset"`
	Train         int      `json:"train"`
	Test          int      `json:"test"`
	Shape         []int    `json:"shape"`
	Features      int      `json:"features"`
	Classes       int      `json:"classes"`
	Source        string   `json:"source"`
	Provenance    string   `json:"provenance,omitempty"`
	Preprocessing []string `json:"preprocessing"`
	TrainClasses  []int    `json:"train_class_counts,omitempty"`
	TestClasses   []int    `json:"test_class_counts,omitempty"`

	// noTrain and noTest say that the source has no such split.
	noTrain, noTest bool
}

// Inspect returns the report of d: its sizes, shape, classes, source and preprocessing (an
// empty list for none), and, for a classification dataset, the examples per class of each
// split.
func Inspect(d *data.Dataset) Report {
	r := Report{Dataset: d.Name, Train: d.Train.Len(), Test: d.Test.Len(), Shape: d.Shape,
		Features: d.Dim(), Classes: d.Classes, Source: d.Source, Preprocessing: d.Preprocessing,
		noTrain: d.Train == nil, noTest: d.Test == nil}
	if r.Preprocessing == nil {
		r.Preprocessing = []string{}
	}
	if spec, err := data.Lookup(d.Name); err == nil {
		r.Provenance = spec.Provenance
	}
	if d.Classes > 0 {
		if d.Train != nil {
			r.TrainClasses = d.Train.ClassCounts(d.Classes)
		}
		if d.Test != nil {
			r.TestClasses = d.Test.ClassCounts(d.Classes)
		}
	}
	return r
}

// WriteText writes the report as "dptrain data inspect" prints it.
func (r Report) WriteText(out io.Writer) {
	fmt.Fprintf(out, "dataset:  %s\n", r.Dataset)
	fmt.Fprintf(out, "train:    %d examples%s\n", r.Train, emptyNote(r.noTrain))
	fmt.Fprintf(out, "test:     %d examples%s\n", r.Test, emptyNote(r.noTest))
	fmt.Fprintf(out, "shape:    %s (%d features)\n", shapeString(r.Shape), r.Features)
	fmt.Fprintf(out, "classes:  %d\n", r.Classes)
	if r.TrainClasses != nil {
		fmt.Fprintf(out, "train per class: %s\n", intsString(r.TrainClasses))
	}
	if r.TestClasses != nil {
		fmt.Fprintf(out, "test per class:  %s\n", intsString(r.TestClasses))
	}
	fmt.Fprintf(out, "preprocessing: %s\n", strings.Join(r.Preprocessing, ", "))
	fmt.Fprintf(out, "source:   %s\n", r.Source)
	if r.Provenance != "" {
		fmt.Fprintf(out, "note:     %s\n", r.Provenance)
	}
}

// shapeString formats a shape as [a,b,c].
func shapeString(s []int) string { return "[" + join(s, ",") + "]" }

// intsString formats counts separated by spaces.
func intsString(v []int) string { return join(v, " ") }

// join formats the integers separated by sep.
func join(v []int, sep string) string {
	parts := make([]string, len(v))
	for i, x := range v {
		parts[i] = fmt.Sprint(x)
	}
	return strings.Join(parts, sep)
}

// emptyNote marks a split the source does not have.
func emptyNote(none bool) string {
	if none {
		return " (none in this source)"
	}
	return ""
}
