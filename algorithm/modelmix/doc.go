// Package modelmix is DP-SGD with ModelMix (Xiao, Wan & Devadas, "Differentially Private Deep
// Learning with ModelMix", Algorithm 1, with the l2+l∞ clipping of Algorithm 2): each step
// starts from a uniformly random point of the box spanned by the last two iterates, its gaps
// widened to τ = κ·η, which Theorem 4.1 accounts for on Poisson batches. Algorithm is the
// registration (section optimizer.modelmix). optimizer.modelmix.momentum adds heavy-ball
// momentum on the privatised gradient, an opt-in outside Theorem 4.1: the run then declares the
// update rule "momentum", which the modelmix accountant refuses, and a certified accountant
// (rdp, pld) stops and calibrates it.
package modelmix
