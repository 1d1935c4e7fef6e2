// Package datasets gathers what "dptrain data list" and "dptrain data inspect" report about
// the datasets: for each known dataset its shape, classes, sizes and where it was found (or
// how to get it), and for a loaded one its sizes, shape, per-class counts, preprocessing and
// source, with the text those commands print.
package datasets
