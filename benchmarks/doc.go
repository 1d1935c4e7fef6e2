// Package benchmarks holds Go benchmarks of dptrain's hot paths and the drivers that reproduce
// the papers' tables; results and plots are written under benchmarks/results.
package benchmarks
