package train

import (
	"strings"
	"testing"

	"github.com/dptrain/dptrain/accounting"
)

// The note of an interrupted run names the run's own accountants: those whose ε covers an
// intermediate model released besides the final one, and those (hidden-state) whose does not;
// never an accountant the run does not have.
func TestHeldNoteNamesTheRunsAccountants(t *testing.T) {
	run := accounting.Run{DatasetSize: 4800, Convexity: accounting.NonConvex, Lipschitz: 1, UpdateRule: "sgd", LastIterateOnly: true}
	for _, tc := range []struct {
		names        []string
		want, absent []string
	}{
		{[]string{"rdp"}, []string{"the ε of rdp bounds every iterate"}, []string{"pld", "gdp", "hidden-state"}},
		{[]string{"rdp", "chien-li"}, []string{"the ε of rdp bounds every iterate", "the hidden-state bound of chien-li covers the last iterate only"}, []string{"pld", "gdp"}},
		{[]string{"chien-li"}, []string{": the hidden-state bound of chien-li"}, []string{"rdp", "bounds every iterate"}},
	} {
		note := heldNote(10, 100, "m.dpm", "private/", tc.names, run)
		for _, w := range tc.want {
			if !strings.Contains(note, w) {
				t.Errorf("%v: %q lacks %q", tc.names, note, w)
			}
		}
		for _, a := range tc.absent {
			if strings.Contains(note, a) {
				t.Errorf("%v: %q names %q, which is not the run's", tc.names, note, a)
			}
		}
	}
}
