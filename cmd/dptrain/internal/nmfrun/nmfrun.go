package nmfrun

import (
	"fmt"
	"math"
	"math/rand/v2"
	"time"

	"github.com/dptrain/dptrain/accounting"
	"github.com/dptrain/dptrain/accounting/mbcd"
	"github.com/dptrain/dptrain/accounting/rdp"
	"github.com/dptrain/dptrain/algorithm/dpmbcd/nmf"
	"github.com/dptrain/dptrain/optim"
)

// Settings are the experiment's settings (Chen & Liu, Appendix D.1.1, Table 2).
type Settings struct {
	Rows, Cols, Rank     int
	Epochs, Seeds, Inner int
	Eta, Kappa, RowNorm  float64
	Clip                 float64
	// Target is the RDP at order Alpha the private methods are calibrated to; Delta the δ of
	// the (ε, δ) also reported.
	Target, Alpha, Delta float64
	// NoiseSeed seeds run s's noise with NoiseSeed+s; -1 draws it from crypto/rand.
	NoiseSeed int64
}

// method: the private block method, DP-SGD on the same objective, and both at σ = 0.
// dp-mbcd-certified recomputes the hidden rows at every visit (the condition mbcd-certified
// needs) and calibrates σ under mbcd-certified.
type method struct{ joint, private, certified bool }

var methods = map[string]method{
	"dp-mbcd": {false, true, false}, "dp-mbcd-certified": {false, true, true},
	"dp-sgd": {true, true, false}, "mbcd": {false, false, false}, "sgd": {true, false, false},
}

// Methods are the method names, in their usual order.
var Methods = []string{"dp-mbcd", "dp-mbcd-certified", "dp-sgd", "mbcd", "sgd"}

// Known reports whether name is a method.
func Known(name string) bool { _, ok := methods[name]; return ok }

// Cell is one (method, b) outcome.
type Cell struct {
	Method string
	B      int
	Sigma  float64
	// Errs are the relative errors ‖XY − M‖_F/‖M‖_F of the runs, one per seed.
	Errs []float64
	// Guarantees are the privacy of Y, one entry per accountant, with its label.
	Guarantees []string
	// Seconds is the mean wall time of a run.
	Seconds float64
}

// Config is the model configuration of method name.
func Config(s Settings, name string) nmf.Config {
	m := methods[name]
	cfg := nmf.Config{Rank: s.Rank, Eta: s.Eta, Kappa: s.Kappa, RowNorm: s.RowNorm, Clip: s.Clip, InnerSteps: s.Inner, Joint: m.joint, Recompute: m.certified}
	if !m.private {
		cfg.Clip = math.Inf(1)
	}
	return cfg
}

// accountants returns fresh mbcd and mbcd-certified accountants of md's run.
func accountants(md *nmf.Model) ([]*mbcd.Accountant, error) {
	p, err := mbcd.New(md.Run())
	if err != nil {
		return nil, err
	}
	c, err := mbcd.NewCertified(md.Run())
	if err != nil {
		return nil, err
	}
	return []*mbcd.Accountant{p, c}, nil
}

// DeclaredRDP composes the records of K epochs of b-row batches into the paper's accountant
// (certified: mbcd-certified) and returns its RDP at alpha.
func DeclaredRDP(md *nmf.Model, b, epochs int, alpha float64, certified bool) (float64, error) {
	accs, err := accountants(md)
	if err != nil {
		return 0, err
	}
	k := 0
	if certified {
		k = 1
	}
	per := md.Run().DatasetSize / b
	for range epochs {
		for j := range per {
			if err := accs[k].Compose(md.Declare(b, j)); err != nil {
				return 0, err
			}
		}
	}
	return accs[k].RDP(alpha)
}

// CalibrateMBCD bisects σ (on log σ) so that the paper's RDP at alpha is at most target,
// rounding against privacy: the returned σ's RDP is ≤ target. It leaves md at that σ.
func CalibrateMBCD(md *nmf.Model, b, epochs int, alpha, target float64, certified bool) (float64, error) {
	rdpAt := func(s float64) (float64, error) {
		if err := md.SetNoiseMultiplier(s); err != nil {
			return 0, err
		}
		return DeclaredRDP(md, b, epochs, alpha, certified)
	}
	lo, hi := 1e-3, 1e4
	if v, err := rdpAt(hi); err != nil || v > target {
		return 0, fmt.Errorf("no σ ≤ %g reaches RDP %g (err %v)", hi, target, err)
	}
	for range 60 {
		mid := math.Sqrt(lo * hi)
		v, err := rdpAt(mid)
		if err != nil {
			return 0, err
		}
		if v > target {
			lo = mid
		} else {
			hi = mid
		}
	}
	return hi, md.SetNoiseMultiplier(hi)
}

// CompositionSigma is DP-SGD's σ by composition: in a shuffle-once epoch an example is in one
// batch, so an epoch costs one replace-one Gaussian release (RDP 2α/σ²) and K epochs compose
// to 2αK/σ² = target; σ is rounded up (against privacy).
func CompositionSigma(alpha float64, epochs int, target float64) float64 {
	return math.Nextafter(math.Sqrt(2*alpha*float64(epochs)/target), math.Inf(1))
}

// RunCell runs method name with b-row batches on the rows×cols matrix m, once per seed.
func RunCell(set Settings, m []float32, name string, b int) (Cell, error) {
	cell := Cell{Method: name, B: b}
	meth, ok := methods[name]
	if !ok {
		return cell, fmt.Errorf("unknown method %q", name)
	}
	cfg := Config(set, name)
	n := set.Rows
	if b <= 0 || n%b != 0 {
		return cell, fmt.Errorf("batch %d does not divide the %d rows", b, n)
	}
	per := n / b
	start := time.Now()
	for s := 1; s <= set.Seeds; s++ {
		rng := rand.New(rand.NewPCG(uint64(s), 0x6e6d66))
		md, err := nmf.New(cfg, m, n, set.Cols, rng)
		if err != nil {
			return cell, err
		}
		if meth.private {
			if meth.joint {
				cell.Sigma = CompositionSigma(set.Alpha, set.Epochs, set.Target)
			} else if s == 1 {
				if cell.Sigma, err = CalibrateMBCD(md, b, set.Epochs, set.Alpha, set.Target, meth.certified); err != nil {
					return cell, err
				}
			}
			if err := md.SetNoiseMultiplier(cell.Sigma); err != nil {
				return cell, err
			}
		}
		var noise *optim.Noise
		if set.NoiseSeed >= 0 {
			noise = optim.NewSeededNoise(uint64(set.NoiseSeed) + uint64(s))
		} else if noise, err = optim.NewNoise(); err != nil {
			return cell, err
		}
		var accs []*mbcd.Accountant
		if meth.private {
			if accs, err = accountants(md); err != nil {
				return cell, err
			}
		}
		perm := rng.Perm(n) // shuffle once, visit cyclically
		for range set.Epochs {
			for j := range per {
				rec, err := md.Step(perm[j*b:(j+1)*b], j, noise)
				if err != nil {
					return cell, err
				}
				for _, a := range accs {
					if err := a.Compose(rec); err != nil {
						return cell, err
					}
				}
			}
		}
		_, rel := md.Objective()
		cell.Errs = append(cell.Errs, rel)
		if s == 1 {
			if cell.Guarantees, err = guarantees(set, accs, meth.certified, cell.Sigma); err != nil {
				return cell, err
			}
		}
	}
	cell.Seconds = time.Since(start).Seconds() / float64(set.Seeds)
	return cell, nil
}

// guarantees formats RDP(α) and ε(δ) of every accountant that covers the run, with labels.
func guarantees(set Settings, accs []*mbcd.Accountant, recompute bool, sigma float64) ([]string, error) {
	if accs == nil {
		return []string{"none (σ = 0: not private)"}, nil
	}
	var out []string
	for _, a := range accs {
		if a.Label() == accounting.Certified && !recompute {
			out = append(out, a.Name()+": not covered (hidden rows carried across visits)")
			continue
		}
		r, err := a.RDP(set.Alpha)
		if err != nil {
			return nil, err
		}
		g, err := a.Epsilon(set.Delta)
		if err != nil {
			return nil, err
		}
		out = append(out, fmt.Sprintf("%s [%s] RDP(%g) %.4g, ε %.4g", a.Name(), a.Label(), set.Alpha, RoundUp(r), g.Epsilon))
	}
	// Composition (rdp accountant), which needs no hidden-state assumption and so covers
	// carried hidden rows too: given the released past, a step whose batch does not hold the
	// differing row has the same law on both datasets, so each shuffle-once epoch costs one
	// replace-one Gaussian release.
	acc, err := rdp.New(accounting.Run{DatasetSize: set.Rows})
	if err != nil {
		return nil, err
	}
	if err := acc.Compose(accounting.Step{Mechanism: accounting.Gaussian, Sampling: accounting.FullBatch,
		Neighbouring: accounting.ReplaceOne, NoiseMultiplier: sigma, SampleRate: 1, Count: set.Epochs}); err != nil {
		return nil, err
	}
	g, err := acc.Epsilon(set.Delta)
	if err != nil {
		return nil, err
	}
	out = append(out, fmt.Sprintf("composition [%s] RDP(%g) %.4g, ε %.4g", g.Label, set.Alpha, RoundUp(2*set.Alpha*float64(set.Epochs)/(sigma*sigma)), RoundUp(g.Epsilon)))
	return out, nil
}

// RoundUp rounds a privacy loss up in its fourth significant digit (against privacy).
func RoundUp(v float64) float64 {
	if v <= 0 || math.IsInf(v, 0) || math.IsNaN(v) {
		return v
	}
	p := math.Pow(10, 3-math.Floor(math.Log10(v)))
	return math.Ceil(v*p) / p
}
