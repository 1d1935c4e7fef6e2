package datasets

import (
	"context"
	"strings"
	"testing"

	"github.com/dptrain/dptrain/data"
)

func TestInspectSynthetic(t *testing.T) {
	d, err := (&data.Locator{Seed: 1}).Load(context.Background(), "synthetic-mixture")
	if err != nil {
		t.Fatal(err)
	}
	r := Inspect(d)
	if r.Train != d.Train.Len() || r.Classes != d.Classes || len(r.TrainClasses) != d.Classes || r.Preprocessing == nil {
		t.Errorf("report %+v", r)
	}
	sum := 0
	for _, c := range r.TrainClasses {
		sum += c
	}
	if sum != r.Train {
		t.Errorf("train per class %v sums to %d, want %d", r.TrainClasses, sum, r.Train)
	}
	var b strings.Builder
	r.WriteText(&b)
	if out := b.String(); !strings.Contains(out, "dataset:  synthetic-mixture\n") || !strings.Contains(out, "shape:    [") || strings.Contains(out, "none in this source") {
		t.Errorf("text:\n%s", out)
	}
}

func TestListNamesEveryKnownDataset(t *testing.T) {
	t.Setenv(data.CacheEnv, t.TempDir())
	rows, err := List(&data.Locator{Dir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	if len(rows) != len(data.Known()) {
		t.Fatalf("%d rows for %d known datasets", len(rows), len(data.Known()))
	}
	var b strings.Builder
	if err := WriteList(&b, rows); err != nil {
		t.Fatal(err)
	}
	for _, e := range rows {
		// A missing dataset says how to get it: the download command, or where to put it.
		if !e.Found && !strings.Contains(e.Source, "dptrain data download --dataset "+e.Dataset) && !strings.Contains(e.Source, "data.path") {
			t.Errorf("%s not found, source %q", e.Dataset, e.Source)
		}
		if e.Provenance != "" && !strings.Contains(b.String(), e.Dataset+": "+e.Provenance+"\n") {
			t.Errorf("table lacks %s's provenance:\n%s", e.Dataset, b.String())
		}
		if !strings.Contains(b.String(), e.Dataset) {
			t.Errorf("table lacks %s:\n%s", e.Dataset, b.String())
		}
	}
	if shapeString([]int{1, 28, 28}) != "[1,28,28]" || intsString([]int{3, 4}) != "3 4" {
		t.Error("shape or count formatting")
	}
}
