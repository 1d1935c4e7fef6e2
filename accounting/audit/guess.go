package audit

import (
	"fmt"
	"math"
	"sort"
)

// Guesses is the outcome of guessing from scores: r guesses made, v of them correct.
type Guesses struct {
	Plus    int `json:"k_plus"`  // k₊: canaries guessed included (the highest scores)
	Minus   int `json:"k_minus"` // k₋: canaries guessed excluded (the lowest scores)
	Correct int `json:"correct"` // v
}

// Made returns r = k₊ + k₋.
func (g Guesses) Made() int { return g.Plus + g.Minus }

// Guess ranks the canaries by score and guesses "included" for the k₊ highest and "excluded"
// for the k₋ lowest (the paper's §3 guesser; ties are broken by index, which is independent of
// the secret), and counts the correct guesses against included. A score must be finite: a
// canary the auditor cannot score is an error, never a silent guess.
func Guess(scores []float64, included []bool, kPlus, kMinus int) (Guesses, error) {
	m := len(scores)
	if len(included) != m {
		return Guesses{}, fmt.Errorf("audit: %d scores for %d canaries", m, len(included))
	}
	if kPlus < 0 || kMinus < 0 || kPlus+kMinus > m {
		return Guesses{}, fmt.Errorf("audit: k₊ = %d and k₋ = %d guesses about %d canaries: want k₊, k₋ ≥ 0 and k₊ + k₋ ≤ m", kPlus, kMinus, m)
	}
	order := make([]int, m)
	for i, s := range scores {
		if math.IsNaN(s) || math.IsInf(s, 0) {
			return Guesses{}, fmt.Errorf("audit: canary %d has score %v: every canary needs a finite score", i, s)
		}
		order[i] = i
	}
	sort.SliceStable(order, func(a, b int) bool { return scores[order[a]] > scores[order[b]] })
	g := Guesses{Plus: kPlus, Minus: kMinus}
	for _, i := range order[:kPlus] {
		if included[i] {
			g.Correct++
		}
	}
	for _, i := range order[m-kMinus:] {
		if !included[i] {
			g.Correct++
		}
	}
	return g, nil
}

// Result is the audit's lower bound and the guesses that gave it.
type Result struct {
	Canaries   int     `json:"canaries"`
	Confidence float64 `json:"confidence"`
	Delta      float64 `json:"delta"`
	// Epsilon is ε_lower: every ε below it is rejected at Confidence.
	Epsilon float64 `json:"epsilon_lower"`
	// Best is the guess count that gave Epsilon; Tried are all that were evaluated.
	Best  Guesses   `json:"best"`
	Tried []Guesses `json:"tried"`
	// Bonferroni is the number of guess counts the confidence was split over.
	Bonferroni int `json:"bonferroni"`
}

// Bound guesses with every (k₊, k₋) in counts, fixed before the scores are seen, and returns
// the largest lower bound. The confidence is split over the len(counts) choices (a Bonferroni
// correction: each is evaluated at level (1 − confidence)/len(counts)), so taking the best
// stays valid at the stated confidence.
func Bound(scores []float64, included []bool, counts []Guesses, delta, confidence float64) (Result, error) {
	if len(counts) == 0 {
		return Result{}, fmt.Errorf("audit: no guess counts to try")
	}
	if !(confidence > 0 && confidence < 1) {
		return Result{}, fmt.Errorf("audit: confidence %v must lie in (0, 1), e.g. 0.95", confidence)
	}
	level := (1 - confidence) / float64(len(counts))
	res := Result{Canaries: len(scores), Confidence: confidence, Delta: delta, Bonferroni: len(counts), Epsilon: -1}
	for _, c := range counts {
		g, err := Guess(scores, included, c.Plus, c.Minus)
		if err != nil {
			return Result{}, err
		}
		eps, err := EpsilonLowerBound(len(scores), g.Made(), g.Correct, delta, 1-level)
		if err != nil {
			return Result{}, err
		}
		res.Tried = append(res.Tried, g)
		if eps > res.Epsilon {
			res.Epsilon, res.Best = eps, g
		}
	}
	return res, nil
}

// DefaultCounts is the grid of guess counts an audit of m canaries tries: k₊ = k₋ = k for k
// in 1%, 2%, 5%, 10%, 20% and 50% of m (at least 1 each, duplicates removed).
func DefaultCounts(m int) []Guesses {
	var out []Guesses
	seen := map[int]bool{}
	for _, f := range []float64{0.01, 0.02, 0.05, 0.1, 0.2, 0.5} {
		k := max(1, int(f*float64(m)))
		if 2*k > m || seen[k] {
			continue
		}
		seen[k] = true
		out = append(out, Guesses{Plus: k, Minus: k})
	}
	return out
}
