// Package steptest holds what the algorithms' tests share: small models implementing
// optim.GradientOracle in plain Go (Table, Zero, Softmax), written independently of the code
// under test, real networks and reference gradient sums, and batch declarations from a real
// sampler (Drawn). Only tests import it.
package steptest
