package nmfrun

import (
	"errors"
	"fmt"
	"io"
	"math"
	"strings"
	"text/tabwriter"

	"gonum.org/v1/gonum/stat"
)

// Check checks the settings and the method names before any run: positive epochs and seeds,
// a positive target at a finite order above 1, and known methods.
func (s Settings) Check(names []string) error {
	if s.Epochs <= 0 || s.Seeds <= 0 {
		return errors.New("--epochs and --seeds must be positive")
	}
	if !(s.Target > 0) || !(s.Alpha > 1) || math.IsInf(s.Alpha, 1) {
		return fmt.Errorf("--rdp %v and --alpha %v: want a positive target at a finite order > 1", s.Target, s.Alpha)
	}
	for _, m := range names {
		if !Known(m) {
			return fmt.Errorf("--methods: unknown %q: want dp-mbcd, dp-mbcd-certified, dp-sgd, mbcd or sgd", m)
		}
	}
	return nil
}

// Run runs every method at every batch size on the matrix m (RunCell), batch sizes outermost,
// and returns the cells in that order. A batch size must divide the rows: the batches are a
// shuffle-once partition of equal batches.
func Run(s Settings, m []float32, names []string, batches []int) ([]Cell, error) {
	var cells []Cell
	for _, b := range batches {
		if b <= 0 || s.Rows%b != 0 {
			return nil, fmt.Errorf("--batch %d must divide the %d rows (shuffle-once partition of equal batches)", b, s.Rows)
		}
		for _, name := range names {
			c, err := RunCell(s, m, name, b)
			if err != nil {
				return nil, fmt.Errorf("%s b=%d: %w", name, b, err)
			}
			cells = append(cells, c)
		}
	}
	return cells, nil
}

// WriteTable writes the cells as the table of "dptrain nmf": method, batch size, σ, the
// relative error's mean and standard deviation over the seeds (0 for one seed), the privacy of
// Y under each accountant and the seconds per run.
func WriteTable(w io.Writer, cells []Cell) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "method\tb\tσ\trel. error (mean ± std)\tprivacy of Y (each accountant, its label)\ts/run")
	for _, c := range cells {
		mean, std := stat.MeanStdDev(c.Errs, nil)
		if len(c.Errs) < 2 {
			std = 0
		}
		fmt.Fprintf(tw, "%s\t%d\t%.4g\t%.4f ± %.4f\t%s\t%.1f\n", c.Method, c.B, c.Sigma, mean, std, strings.Join(c.Guarantees, "; "), c.Seconds)
	}
	return tw.Flush()
}
