package dpulr

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"

	"gonum.org/v1/gonum/mat"
)

// Control holds DP-ULR's privacy-controller settings for one step (Feng et al., "Forward Learning with Differential Privacy",
// the privacy controller of Eq. 7 and the remediation of Section 3.2, with σ clamped).
type Control struct {
	// Copies is K, the noisy forward copies per example.
	Copies int
	// ClipNorm is C and NoiseMultiplier σ0: every direction of a layer's released batch sum
	// must carry noise variance at least σ0²C².
	ClipNorm, NoiseMultiplier float64
	// SigmaFloor and SigmaCap clamp the injected σ_l (Eq. 7 gives σ = 0 when λ_min = 0); SigmaCap 0 means none.
	SigmaFloor, SigmaCap float64
}

// LayerNoise is the controller's decision for one layer at one step: the injected σ_l and
// the eigen-direction top-up that brings every direction of the batch sum's covariance up to
// σ0²C² whatever σ_l is.
type LayerNoise struct {
	// Sigma is σ_l, the std of the noise added to the layer's pre-activation output.
	Sigma float64
	// LambdaMin is λ_min(M_l), 0 when M_l is rank-deficient (always when the batch is smaller
	// than the layer's augmented input dimension).
	LambdaMin float64
	// basis holds, as columns, orthonormal eigenvectors of M_l with positive eigenvalues;
	// topUp[i] is √e_i along column i, complement the std on the orthogonal complement.
	basis      *mat.Dense
	topUp      []float64
	complement float64
	dim        int
	sigmaOnly  bool // a public σ_l: no eigen-directions, TopUp refuses
}

// relativeRankTol treats eigenvalues of M_l below this fraction of the largest as zero: such a direction gets the full σ0·C top-up, which only adds noise.
const relativeRankTol = 1e-6

// ControlLayer runs the privacy controller for one layer. inputs is the b×d matrix Ã of the
// layer's augmented inputs (one row ã_d = [a_d; 1] per example for a dense layer; for a conv
// layer the caller stacks each example's im2col patches and repeats its clean loss per patch
// row), loss0 the clean per-row loss L0.
//
// It forms M_l = Σ_d L0(d)² ã_d ã_dᵀ = Ãᵀ W Ã (Feng et al., Eq. 26; the batch covariance is
// I_out ⊗ M_l / (Kσ²)), eigendecomposes it with gonum's EigenSym (or, when b < d, the b×b dual
// W^½ Ã Ãᵀ W^½ whose eigenvectors map to u_i = Ãᵀ W^½ v_i / √λ_i), sets σ_l by equality in Eq. 7,
// σ_l² = λ_min⁺/(K C² σ0²), clamped to [SigmaFloor, SigmaCap], and the top-up variances
// e_i = max(0, σ0²C² − λ_i/(Kσ_l²)) of Feng et al.'s remediation (Section 3.2).
func ControlLayer(inputs *mat.Dense, loss0 []float64, c Control) (LayerNoise, error) {
	if c.Copies < 1 || !(c.ClipNorm > 0) || !(c.NoiseMultiplier > 0) || math.IsInf(c.ClipNorm, 0) || math.IsInf(c.NoiseMultiplier, 0) {
		return LayerNoise{}, fmt.Errorf("dpulr: DP-ULR needs copies ≥ 1, clip_norm > 0 and noise_multiplier > 0 (got K = %d, C = %v, σ0 = %v)", c.Copies, c.ClipNorm, c.NoiseMultiplier)
	}
	if !(c.SigmaFloor > 0) || c.SigmaCap < 0 || (c.SigmaCap > 0 && c.SigmaCap < c.SigmaFloor) {
		return LayerNoise{}, fmt.Errorf("dpulr: DP-ULR's injected-noise floor %v must be > 0 and its cap %v 0 (none) or ≥ the floor", c.SigmaFloor, c.SigmaCap)
	}
	b, d := inputs.Dims()
	if len(loss0) != b {
		return LayerNoise{}, fmt.Errorf("dpulr: %d clean losses for %d input rows", len(loss0), b)
	}
	// W^½ Ã: rows scaled by |L0(d)|.
	var wa mat.Dense
	wa.CloneFrom(inputs)
	for i, l := range loss0 {
		if math.IsNaN(l) || math.IsInf(l, 0) {
			return LayerNoise{}, fmt.Errorf("dpulr: example %d has non-finite clean loss %v: DP-ULR's controller needs a finite L0 per example (lower the learning rate or check the data)", i, l)
		}
		row := wa.RawRowView(i)
		for j := range row {
			if math.IsNaN(row[j]) || math.IsInf(row[j], 0) {
				return LayerNoise{}, fmt.Errorf("dpulr: example %d has a non-finite layer input: DP-ULR cannot bound its covariance", i)
			}
			row[j] *= math.Abs(l)
		}
	}
	var lambda []float64
	var basis *mat.Dense
	var eig mat.EigenSym
	if b >= d {
		var m mat.SymDense
		m.SymOuterK(1, wa.T())
		if !eig.Factorize(&m, true) {
			return LayerNoise{}, errors.New("dpulr: DP-ULR's controller: eigendecomposition of M_l did not converge")
		}
		lambda = eig.Values(nil)
		basis = &mat.Dense{}
		eig.VectorsTo(basis)
	} else {
		var g mat.SymDense
		g.SymOuterK(1, &wa)
		if !eig.Factorize(&g, true) {
			return LayerNoise{}, errors.New("dpulr: DP-ULR's controller: eigendecomposition of the b×b dual of M_l did not converge")
		}
		lambda = eig.Values(nil)
	}
	if b < d {
		var v mat.Dense
		eig.VectorsTo(&v)
		basis = mat.NewDense(d, b, nil)
		basis.Mul(wa.T(), &v) // column i: Ãᵀ W^½ v_i, of norm √λ_i
		for i, l := range lambda {
			s := 0.0
			if l > 0 {
				s = 1 / math.Sqrt(l)
			}
			col := mat.NewVecDense(d, nil)
			col.ScaleVec(s, basis.ColView(i))
			basis.SetCol(i, col.RawVector().Data)
		}
	}
	maxL := 0.0
	for _, l := range lambda {
		maxL = math.Max(maxL, l)
	}
	// Keep the eigen-directions with λ_i above the rank tolerance; the rest join the complement.
	var keep []int
	minPos := math.Inf(1)
	for i, l := range lambda {
		if l > relativeRankTol*maxL && l > 0 {
			keep = append(keep, i)
			minPos = math.Min(minPos, l)
		}
	}
	n := LayerNoise{dim: d}
	if len(keep) == d {
		n.LambdaMin = minPos
	}
	s0c := c.NoiseMultiplier * c.ClipNorm
	sigma := c.SigmaFloor
	if len(keep) > 0 {
		sigma = math.Max(c.SigmaFloor, math.Sqrt(minPos/float64(c.Copies))/s0c) // Eq. 7 with equality
	}
	if c.SigmaCap > 0 {
		sigma = math.Min(sigma, c.SigmaCap)
	}
	n.Sigma = sigma
	n.basis = mat.NewDense(d, max(len(keep), 1), nil)
	for j, i := range keep {
		n.basis.SetCol(j, mat.Col(nil, i, basis))
		e := s0c*s0c - lambda[i]/(float64(c.Copies)*sigma*sigma)
		n.topUp = append(n.topUp, math.Sqrt(math.Max(e, 0)))
	}
	if len(keep) < d {
		n.complement = s0c
	}
	return n, nil
}

// TopUp returns the eigen-direction remediation noise for a layer's out×d batch sum (Feng et al.,
// Section 3.2): E = Ξ (U diag(√e) Uᵀ + s (I − U Uᵀ)) with Ξ iid N(0, 1), s = σ0·C on the span M_l
// does not reach. Each row's covariance is U diag(e) Uᵀ + s² (I − U Uᵀ), so with the estimator's
// U diag(λ/(Kσ²)) Uᵀ every direction reaches σ0²C².
func (n LayerNoise) TopUp(out int, rng *rand.Rand) *mat.Dense {
	if n.sigmaOnly {
		panic("dpulr: TopUp on a public σ_l (certified mode), which computes no eigen-directions: paper mode needs the controller")
	}
	xi := mat.NewDense(out, n.dim, nil)
	raw := xi.RawMatrix().Data
	for i := range raw {
		raw[i] = rng.NormFloat64()
	}
	e := mat.NewDense(out, n.dim, nil)
	if len(n.topUp) > 0 {
		var proj mat.Dense // Ξ U, out×r
		u := n.basis
		proj.Mul(xi, u)
		var projE, projC mat.Dense
		projE.CloneFrom(&proj)
		for j, s := range n.topUp {
			for i := 0; i < out; i++ {
				projE.Set(i, j, projE.At(i, j)*s)
			}
		}
		e.Mul(&projE, u.T()) // Ξ U diag(√e) Uᵀ
		if n.complement > 0 {
			projC.Mul(&proj, u.T()) // Ξ U Uᵀ
			var c mat.Dense
			c.Sub(xi, &projC)
			c.Scale(n.complement, &c)
			e.Add(e, &c)
		}
		return e
	}
	e.Scale(n.complement, xi)
	return e
}
