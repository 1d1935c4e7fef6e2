package nmfrun

import (
	"strings"
	"testing"

	"github.com/dptrain/dptrain/data"
)

func TestCheck(t *testing.T) {
	ok := Settings{Epochs: 1, Seeds: 1, Target: 0.42, Alpha: 2}
	if err := ok.Check(Methods); err != nil {
		t.Errorf("valid settings: %v", err)
	}
	for _, tc := range []struct {
		edit    func(*Settings)
		methods []string
		want    string
	}{
		{func(s *Settings) { s.Seeds = 0 }, nil, "--epochs and --seeds"},
		{func(s *Settings) { s.Alpha = 1 }, nil, "--alpha 1"},
		{func(s *Settings) {}, []string{"adam"}, `unknown "adam"`},
	} {
		s := ok
		tc.edit(&s)
		if err := s.Check(tc.methods); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("error %v, want one mentioning %q", err, tc.want)
		}
	}
}

// Run gives a cell per method and batch size, batch sizes outermost, and WriteTable a row each.
func TestRunAndWriteTable(t *testing.T) {
	ds, _, err := data.NewLowRank(data.LowRankConfig{Rows: 40, Cols: 10, Rank: 3, Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	set := Settings{Rows: 40, Cols: 10, Rank: 3, Epochs: 2, Seeds: 1, Inner: 1, Eta: 1, Kappa: 1.1, RowNorm: 3, Clip: 0.5, Target: 0.42, Alpha: 2, Delta: 1e-5}
	cells, err := Run(set, ds.Train.X, []string{"sgd", "mbcd"}, []int{10, 20})
	if err != nil {
		t.Fatal(err)
	}
	if len(cells) != 4 || cells[0].B != 10 || cells[1].Method != "mbcd" || cells[2].B != 20 {
		t.Fatalf("cells %+v", cells)
	}
	var b strings.Builder
	if err := WriteTable(&b, cells); err != nil {
		t.Fatal(err)
	}
	if got := strings.Count(b.String(), "\n"); got != 5 || !strings.Contains(b.String(), "± 0.0000") {
		t.Errorf("table (%d lines, one seed: std 0):\n%s", got, b.String())
	}
	if _, err := Run(set, ds.Train.X, []string{"sgd"}, []int{7}); err == nil || !strings.Contains(err.Error(), "--batch 7") {
		t.Errorf("batch 7 of 40 rows: %v", err)
	}
}
