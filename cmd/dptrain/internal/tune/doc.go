// Package tune runs a private hyperparameter search end to end: the mechanism of Papernot &
// Steinke, "Hyperparameter Tuning with Renyi Differential Privacy" (ICLR 2022), as
// accounting/tuning accounts for it.
//
// A space file (Space) gives the whole search's target (ε, δ), the law of the number K of
// candidates, the validation fraction and the hyperparameters. Run then
//
//  1. holds out the last v training examples for validation (a split fixed by position);
//  2. lists every setting of batch size and length the space allows and calibrates each one's
//     noise multiplier so that the search, with the pointwise largest candidate curve, meets
//     the target (Calibrate);
//  3. draws K from its law and every candidate's hyperparameters independently, with
//     crypto/rand (or the space's seed: reproducible, NOT private), and writes the candidates
//     as the cells of a sweep plan, so that they run with the sweep's workers, checkpoint on
//     Ctrl-C and resume;
//  4. scores every finished candidate once by its count of correct validation predictions
//     plus Gaussian noise (sensitivity 1), counts the failed ones without running them again;
//  5. releases only the best candidate (DIR/release/) and writes DIR/summary.json with the
//     search's certified ε, checked again with the runs as they ran.
//
// Submit draws the same search but writes the candidates as a Slurm job array (the sweep's
// emitter) instead of running them; Run on a search whose candidates are on Slurm trains none
// of them, and scores and releases once the array has ended.
//
// K, the candidates and their scores stay in DIR/private/: the theorems cover the best
// candidate's output only.
package tune
