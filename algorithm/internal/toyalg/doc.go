// Package toyalg is a complete algorithm that dptrain does not ship, kept to show (and test)
// that adding an algorithm is one directory plus one registration line: its step (noisy
// clipped gradient descent with the step size scaled by its section's "scale"), the records it
// declares, its section, its checks and its registration (Algorithm) are all here, and its
// test registers it on the trainer's registry with one Register call and trains it end to end
// from a config.
package toyalg
