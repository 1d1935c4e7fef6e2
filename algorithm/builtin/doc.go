// Package builtin lists the algorithms dptrain ships: Registry holds one registration line per
// algorithm, each returned by the algorithm's own package (algorithm/dpsgd, algorithm/dpsgld,
// algorithm/modelmix, algorithm/dpulr, algorithm/dpmbcd). Its tests check what every built-in
// optimizer shares: the records Declare predicts are the ones Step releases, and a restored
// state continues bit-identically.
package builtin
