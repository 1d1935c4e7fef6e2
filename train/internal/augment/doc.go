// Package augment is augmentation multiplicity (De, Berrada, Hayes, Smith & Balle, "Unlocking
// High-Accuracy Differentially Private Image Classification through Scale", 2022, Section 3.1):
// every example of a batch is augmented K times (a random crop of the image padded with zeros,
// and a random horizontal flip), the K gradients of one example are averaged, and the average is
// what gets clipped. Each example therefore still enters the clipped sum once, with norm at most
// the clip norm C: the sensitivity of the sum, and so the records an optimizer declares and the
// accounting, are those of the un-augmented step.
//
// Oracle wraps a model's optim.GradientOracle: its ClippedGradSum is
//
//	Σ_i clip_C( (1/K) Σ_k ∇ℓ(θ; aug_{i,k}(x_i), y_i) ),
//
// computed on the inner oracle's PerSampleGradSum a chunk of examples at a time. An example with
// a non-finite gradient for any of its copies is clipped to zero and counted in
// Stats.NonFinite, as the models do for one copy.
//
// The augmentations are drawn from a key of 32 bytes that the caller takes from its own secret
// stream (a run's noise, split) and a round number the caller supplies (a trainer's step
// count). Example i's draws come from a ChaCha8 stream seeded with SHA-256 of the key, the
// round and the example itself (its label and input), so they depend on nothing else of the
// batch: removing an example from a batch leaves every other example's copies, and so its
// contribution, exactly as they were. They change with every round, and a resumed or
// data-parallel run draws the same ones as an uninterrupted single process.
//
// A feature extractor too slow to run at every step (a scattering transform) is run once on
// each of an image's ViewTransforms instead; with Config.Views the rows hold those views, and
// an example's K copies are K of its views, drawn the same way.
package augment
