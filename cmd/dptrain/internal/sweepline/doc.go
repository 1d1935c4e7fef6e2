// Package sweepline formats the line "dptrain sweep run" prints as a cell ends, and decides
// the ε that line shows: the smallest certified ε of the run (each certified mode's ε is a
// valid bound, so the smallest is the run's best guarantee), rounded up to three significant
// digits so that it never under-reports, else the first mode that gave a number, with its
// label and the run's certified ε beside it; and the totals it prints when the run ends.
package sweepline
