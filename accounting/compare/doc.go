// Package compare composes one training run's steps in every accounting mode and compares the
// ε each certifies: the evaluation behind "dptrain account compare".
//
// A Spec describes the run: its declaration (accounting.Run), the record of one step
// (accounting.Step, built from a Mechanism by Mechanism.Step), the number of steps, δ, the
// steps at which ε is also reported, and an optional DP-MBCD block schedule. Evaluate builds
// every mode, composes the steps in each, evaluates ε at every checkpoint and returns a Report:
// one Row per mode, applicable or not (with the reason), and the "best" row, the pointwise
// smallest ε over the applicable certified modes. Each certified mode's ε is a valid guarantee
// for the same run, so their minimum is one too; paper and approximate modes never enter it.
//
// Epsilon is the one-mode case behind "dptrain account": the guarantee of a number of identical
// steps under one named mode.
//
// Repeated and Described are the runs as those commands are told them: Repeated (for "dptrain
// account" and its calibrate) turns a sample rate, a number of steps or epochs, a sampling
// scheme and δ into the step record, and EpsilonEach and Calibrate account for it; Described
// (for "dptrain account compare") checks its description and evaluates it, and WriteTable
// prints the report. Their errors name each parameter by the command's flag.
package compare
