// Package dptest is the neighbouring-dataset sensitivity harness: it drives a private
// optimizer's real Step black-box on a batch D and on a neighbouring batch D′ (one example
// removed, or one replaced), from identical states with identical seeded noise, and measures
// how far each released record moved, in the units the record declares.
//
// Differential privacy is a statement about two neighbouring datasets (Dwork & Roth, "The
// Algorithmic Foundations of Differential Privacy", Definition 2.4), and so is this test: it
// does not ask whether a batch's clipped sum equals the sum of individually clipped examples
// (which shares the implementation's assumptions), but whether the release on D and on D′
// differ by at most the declared sensitivity. Its measurement reads only the parameters before
// and after the step and the step's records:
//
//	S = (θ_before − θ_after)·b/η     (b = optim.Normaliser(record), η = record.StepSize)
//
// is the released sum for a plain SGD update, so ‖S(D) − S(D′)‖ must not exceed the record's
// Sensitivity under add/remove adjacency, and twice it when one example is replaced. Any
// post-processing the step applies after the noise (projection, ModelMix's mixing, identical on
// both sides) can only shrink the difference. Float32 arithmetic makes the measurement exact
// only up to the rounding of the stored parameters and of the released sum; Allowance is that
// rounding, computed from the values themselves, and Ratio excludes it.
//
// Run takes the step on D once and Step.Measure measures it against each neighbour D′ (a
// removal and a replacement of the same example share it): the step on D is deterministic, so
// running it again for every D′ would only repeat it.
//
// The registered algorithms are driven through it by the trainer's tests, over every model and
// engine an algorithm accepts, crafted examples at every position of batches that cross the
// direct executor's block and chunk boundaries, and adversarial parameters.
package dptest
