package mbcd

import (
	"math"

	"github.com/dptrain/dptrain/accounting"
)

// ledger is the state of one released block: its inverse LSI constant and the bound on R_α/α
// given where the differing example sits (Chen & Liu, Corollary 4.5, applied step by step). Which of e, done/pending and every is
// used depends on the sampling scheme.
type ledger struct {
	invc  float64   // 1/c_t of the block's current iterate (Lemma C.3)
	e     []float64 // shuffle-once: e[j0]
	done  float64   // reshuffling: worst e given i0's batch of this epoch has run
	pend  float64   // reshuffling: worst e given it has not
	every float64   // fresh subsets or full batch: i0 in every batch
	t     int       // steps of this block
}

func newLedger(batches int, invc0 float64) *ledger {
	return &ledger{invc: invc0, e: make([]float64, batches), done: math.Inf(-1)}
}

func (l *ledger) clone() *ledger {
	c := *l
	c.e = append([]float64(nil), l.e...)
	return &c
}

// update is one step of the block: batch index j, step size η, noise control o (variance 2η·o),
// loss injection Δ of a differing step, Lipschitz constants lf, lt of the gradient map and the
// prox, and the contraction exponent (1/L_T² as printed, 1 certified).
func (l *ledger) update(s accounting.Sampling, perEpoch, j int, eta, o, delta, lf, lt, exponent float64) {
	// Contraction of a non-differing step (Corollary 4.5 (1)); it uses the LSI constant of the
	// pre-step state. 1/c = 0 (a point mass: nothing differs yet) or L_F = 0 (a constant map)
	// forget everything.
	f := 0.0
	if l.invc > 0 && lf > 0 {
		f = math.Pow(1+2*eta*o/(lf*lf*l.invc), -exponent)
	}
	switch s {
	case accounting.ShuffledOnce:
		for j0 := range l.e {
			if j0 == j {
				l.e[j0] += delta
			} else {
				l.e[j0] *= f
			}
		}
	case accounting.Shuffled:
		// done is −Inf at the start of an epoch (no differing step yet): keep it so, as −Inf·0
		// would be NaN.
		if !math.IsInf(l.done, -1) {
			l.done *= f
		}
		l.done = math.Max(l.done, l.pend+delta)
		l.pend *= f
		if (l.t+1)%perEpoch == 0 {
			l.pend = math.Max(l.done, l.pend)
			l.done = math.Inf(-1)
		}
	default:
		l.every += delta
	}
	lip := lf * lt
	l.invc = lip*lip*l.invc + 2*eta*lt*lt*o
	l.t++
}

// worst returns the bound on R_α/α for the worst position of the differing example.
func (l *ledger) worst(s accounting.Sampling) float64 {
	switch s {
	case accounting.ShuffledOnce:
		m := 0.0
		for _, x := range l.e {
			m = math.Max(m, x)
		}
		return m
	case accounting.Shuffled:
		return math.Max(0, math.Max(l.done, l.pend))
	default:
		return l.every
	}
}
