package tune

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"slices"
	"strconv"
	"strings"

	"gopkg.in/yaml.v3"

	"github.com/dptrain/dptrain/accounting/tuning"
	"github.com/dptrain/dptrain/train/config"
)

// Space is a search space file: the privacy of the whole search, the law of the number of
// candidates, the validation split, and the hyperparameters drawn for each candidate.
type Space struct {
	// TargetEpsilon and Delta are the (ε, δ) of the whole search: every candidate's noise is
	// calibrated so that the search's certified ε is at most TargetEpsilon.
	TargetEpsilon float64 `yaml:"target_epsilon"`
	Delta         float64 `yaml:"delta"`
	// Seed, when set, makes the whole search reproducible: the number of candidates, their
	// hyperparameters, every run's batches and noise, and the scores' noise. Such a search is
	// NOT private whatever its ε says.
	Seed       *uint64    `yaml:"seed"`
	Candidates Law        `yaml:"candidates"`
	Validation Validation `yaml:"validation"`
	// Parameters are drawn independently for each candidate.
	Parameters []Parameter `yaml:"parameters"`
}

// Law is the law of the number K of candidates.
type Law struct {
	// Law is poisson, negative-binomial, logarithmic (negative-binomial with η = 0) or
	// geometric (η = 1).
	Law string `yaml:"law"`
	// Mean is E[K].
	Mean float64 `yaml:"mean"`
	// Eta is η of the negative binomial (only with law negative-binomial).
	Eta *float64 `yaml:"eta"`
}

// Validation is the held-out split that scores the candidates.
type Validation struct {
	// Fraction of the training examples held out (the last ones of the training split) to
	// score the candidates; they are never trained on.
	Fraction float64 `yaml:"fraction"`
	// Noise is the standard deviation σ_s of the Gaussian noise added to each candidate's
	// count of correct validation predictions (0: DefaultScoreNoise).
	Noise float64 `yaml:"noise"`
}

// Parameter is one hyperparameter: a config key and the values it is drawn from.
type Parameter struct {
	// Key is a config key, as --set takes it (optimizer.learning_rate, model.hidden, ...).
	Key string `yaml:"key"`
	// Values, when given, are drawn from uniformly (each a YAML value: 0.1, [128, 64], ...).
	Values []yaml.Node `yaml:"values"`
	// Range, when given instead, is drawn from uniformly (or log-uniformly).
	Range *Range `yaml:"range"`
}

// Range is an interval of numbers.
type Range struct {
	Lo  float64 `yaml:"lo"`
	Hi  float64 `yaml:"hi"`
	Log bool    `yaml:"log"`
	// Int draws whole numbers in [Lo, Hi].
	Int bool `yaml:"int"`
}

// Keys the search sets itself or that would change what the accounting covers.
var forbidden = map[string]string{
	"seed":                       "set seed in the space file instead: it seeds the whole search",
	"name":                       "the search names its candidates",
	"optimizer.noise_multiplier": "the search calibrates σ for every candidate to meet target_epsilon",
	"optimizer.algorithm":        "the search accounts for dp-sgd candidates only: set it in the base config",
	"optimizer.sampling":         "the search accounts for Poisson sampling only: set it in the base config",
	"optimizer.min_batch_size":   "the search accounts for Poisson sampling only",
}

// forbiddenPrefix are config sections the space may not draw from.
var forbiddenPrefix = map[string]string{
	"privacy.": "the space file's target_epsilon and delta govern the whole search",
	"data.":    "every candidate trains on the same data; the validation split is the space file's",
	"output.":  "the search places every candidate's run directory",
}

// lengthKeys set a candidate's number of steps or its sample rate: the accounting bounds every
// setting the space allows, so these take a list of values, not a range.
var lengthKeys = []string{"optimizer.batch_size", "training.epochs", "training.steps"}

var (
	spaceKeys      = []string{"target_epsilon", "delta", "seed", "candidates", "validation", "parameters"}
	lawKeys        = []string{"law", "mean", "eta"}
	validationKeys = []string{"fraction", "noise"}
	parameterKeys  = []string{"key", "values", "range"}
	rangeKeys      = []string{"lo", "hi", "log", "int"}
)

// LoadSpace reads and checks a space file.
func LoadSpace(path string) (*Space, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("space: %w", err)
	}
	s, err := ParseSpace(b)
	if err != nil {
		return nil, fmt.Errorf("space %s: %w", path, err)
	}
	return s, nil
}

// ParseSpace parses and checks a space file's bytes. Unknown keys are errors, with their line.
func ParseSpace(b []byte) (*Space, error) {
	var root yaml.Node
	if err := yaml.Unmarshal(b, &root); err != nil {
		return nil, err
	}
	if len(root.Content) == 0 {
		return nil, errors.New("the file is empty: start from configs/tune/quickstart-space.yaml")
	}
	if err := checkKeys(root.Content[0]); err != nil {
		return nil, err
	}
	s := new(Space)
	if err := root.Decode(s); err != nil {
		return nil, fmt.Errorf("%w (see configs/tune/quickstart-space.yaml for each key's form)", err)
	}
	if err := s.check(); err != nil {
		return nil, err
	}
	return s, nil
}

// checkKeys refuses keys the space file does not have, naming the line and the keys it has.
func checkKeys(doc *yaml.Node) error {
	var errs []error
	var walk func(n *yaml.Node, path string, known []string)
	walk = func(n *yaml.Node, path string, known []string) {
		if n.Kind != yaml.MappingNode {
			if path == "" || n.Tag != "!!null" {
				errs = append(errs, fmt.Errorf("line %d: %s must be a mapping of keys %s", n.Line, or(path, "the file"), strings.Join(known, ", ")))
			}
			return
		}
		for i := 0; i+1 < len(n.Content); i += 2 {
			k, v := n.Content[i], n.Content[i+1]
			full := strings.TrimPrefix(path+"."+k.Value, ".")
			if !slices.Contains(known, k.Value) {
				errs = append(errs, fmt.Errorf("line %d: unknown key %s: %s has %s", k.Line, full, or(path, "the space file"), strings.Join(known, ", ")))
				continue
			}
			switch full {
			case "candidates":
				walk(v, full, lawKeys)
			case "validation":
				walk(v, full, validationKeys)
			case "parameters":
				if v.Kind != yaml.SequenceNode {
					errs = append(errs, fmt.Errorf("line %d: parameters must be a list of {key, values} or {key, range}", v.Line))
					continue
				}
				for j, p := range v.Content {
					walk(p, fmt.Sprintf("parameters[%d]", j), parameterKeys)
					if p.Kind != yaml.MappingNode {
						continue
					}
					for m := 0; m+1 < len(p.Content); m += 2 {
						if p.Content[m].Value == "range" {
							walk(p.Content[m+1], fmt.Sprintf("parameters[%d].range", j), rangeKeys)
						}
					}
				}
			}
		}
	}
	walk(doc, "", spaceKeys)
	return errors.Join(errs...)
}

func or(s, alt string) string {
	if s == "" {
		return alt
	}
	return s
}

// check validates the values, each error naming its key and what to write instead.
func (s *Space) check() error {
	var errs []error
	bad := func(format string, args ...any) { errs = append(errs, fmt.Errorf(format, args...)) }
	if !(s.TargetEpsilon > 0) || math.IsInf(s.TargetEpsilon, 0) {
		bad("target_epsilon = %v: the whole search's ε must be a positive number, e.g. target_epsilon: 2", s.TargetEpsilon)
	}
	if !(s.Delta > 0 && s.Delta < 1) {
		bad("delta = %v: the whole search's δ must be in (0, 1), below 1/n, e.g. delta: 1.0e-5", s.Delta)
	}
	if _, err := s.Candidates.Distribution(); err != nil {
		errs = append(errs, err)
	}
	if f := s.Validation.Fraction; !(f > 0 && f < 1) {
		bad("validation.fraction = %v: the share of the training examples held out to score the candidates must be in (0, 1), e.g. validation.fraction: 0.1", f)
	}
	if n := s.Validation.Noise; !(n >= 0) || math.IsInf(n, 0) {
		bad("validation.noise = %v: the score's noise σ_s must be a positive number, or 0 for the default (1%% of the validation examples)", n)
	}
	if len(s.Parameters) == 0 {
		bad("parameters is empty: list at least one, e.g. parameters: [{key: optimizer.learning_rate, range: {lo: 0.05, hi: 2, log: true}}]")
	}
	seen := map[string]bool{}
	for _, p := range s.Parameters {
		if err := p.check(); err != nil {
			errs = append(errs, err)
		}
		if seen[p.Key] {
			bad("parameters: %s is listed twice: give its values once", p.Key)
		}
		seen[p.Key] = true
	}
	if seen["training.epochs"] && seen["training.steps"] {
		bad("parameters: training.epochs and training.steps both listed: give the candidates' length once, in epochs or in steps")
	}
	return errors.Join(errs...)
}

func (p Parameter) check() error {
	if p.Key == "" {
		return errors.New("parameters: an entry has no key: give the config key it draws, e.g. key: optimizer.learning_rate")
	}
	if why, ok := forbidden[p.Key]; ok {
		return fmt.Errorf("parameters: %s cannot be searched: %s", p.Key, why)
	}
	for prefix, why := range forbiddenPrefix {
		if strings.HasPrefix(p.Key, prefix) {
			return fmt.Errorf("parameters: %s cannot be searched: %s", p.Key, why)
		}
	}
	switch {
	case (len(p.Values) > 0) == (p.Range != nil):
		return fmt.Errorf("parameters: %s: give either values: [...] or range: {lo, hi}, not both or neither", p.Key)
	case p.Range != nil && slices.Contains(lengthKeys, p.Key):
		return fmt.Errorf("parameters: %s: give a list of values, not a range: the accounting bounds every candidate's sample rate and length, so they must be finitely many", p.Key)
	case p.Range != nil:
		r := p.Range
		if !(r.Lo < r.Hi) || math.IsInf(r.Lo, 0) || math.IsInf(r.Hi, 0) {
			return fmt.Errorf("parameters: %s: range lo = %v, hi = %v: want finite lo < hi", p.Key, r.Lo, r.Hi)
		}
		if r.Log && !(r.Lo > 0) {
			return fmt.Errorf("parameters: %s: a log range needs lo > 0 (lo = %v)", p.Key, r.Lo)
		}
		if r.Int && (r.Lo != math.Trunc(r.Lo) || r.Hi != math.Trunc(r.Hi)) {
			return fmt.Errorf("parameters: %s: an int range needs whole lo and hi (lo = %v, hi = %v)", p.Key, r.Lo, r.Hi)
		}
	}
	return nil
}

// DefaultScoreNoise is σ_s for v validation examples when the space file gives none: 1% of
// v (a standard deviation of one percentage point of validation accuracy), at least 1.
func DefaultScoreNoise(v int) float64 { return max(1, 0.01*float64(v)) }

// Distribution is the law of the number of candidates.
func (l Law) Distribution() (tuning.Distribution, error) {
	if l.Eta != nil && l.Law != "negative-binomial" {
		return tuning.Distribution{}, fmt.Errorf("candidates.eta is only for law negative-binomial (law is %q): remove it", l.Law)
	}
	switch l.Law {
	case "poisson":
		if !(l.Mean > 0) || math.IsInf(l.Mean, 0) {
			return tuning.Distribution{}, fmt.Errorf("candidates.mean = %v: the Poisson mean number of candidates must be a positive number, e.g. candidates: {law: poisson, mean: 4}", l.Mean)
		}
		return tuning.Poisson(l.Mean), nil
	case "negative-binomial", "logarithmic", "geometric":
		eta := map[string]float64{"logarithmic": 0, "geometric": 1}[l.Law]
		if l.Law == "negative-binomial" {
			if l.Eta == nil {
				return tuning.Distribution{}, errors.New("candidates.eta is missing: law negative-binomial needs its shape η > −1, e.g. eta: 0.5 (or law: logarithmic for η = 0, geometric for η = 1)")
			}
			eta = *l.Eta
		}
		gamma, err := tuning.GammaForMean(eta, l.Mean)
		if err != nil {
			return tuning.Distribution{}, fmt.Errorf("candidates (law %s, mean %v): %w", l.Law, l.Mean, err)
		}
		return tuning.TruncatedNegativeBinomial(eta, gamma), nil
	}
	return tuning.Distribution{}, fmt.Errorf("candidates.law = %q: want poisson, negative-binomial (with eta), logarithmic or geometric", l.Law)
}

// CheckAgainst parses the base config with each value of every parameter (a range's ends), so
// that a value train would refuse fails now, naming the parameter, before any run.
func (s *Space) CheckAgainst(base []byte) error {
	var errs []error
	for _, p := range s.Parameters {
		var vals []string
		if p.Range != nil {
			vals = []string{p.Range.format(p.Range.Lo), p.Range.format(p.Range.Hi)}
		} else {
			for i := range p.Values {
				v, err := flow(&p.Values[i])
				if err != nil {
					return fmt.Errorf("parameters: %s: value on line %d: %w", p.Key, p.Values[i].Line, err)
				}
				vals = append(vals, v)
			}
		}
		for _, v := range vals {
			if _, err := config.ParseConfig(base, []string{p.Key + "=" + v}); err != nil {
				errs = append(errs, fmt.Errorf("parameters: %s = %s: the base config refuses it: %w", p.Key, v, err))
			}
		}
	}
	return errors.Join(errs...)
}

// Draw draws one candidate's hyperparameters with r, independently of every other candidate
// and of the data: one --set override per parameter, in the file's order.
func (s *Space) Draw(r *rand.Rand) ([]string, error) {
	sets := make([]string, 0, len(s.Parameters))
	for _, p := range s.Parameters {
		var v string
		if p.Range != nil {
			v = p.Range.format(p.Range.draw(r))
		} else {
			var err error
			if v, err = flow(&p.Values[r.IntN(len(p.Values))]); err != nil {
				return nil, err
			}
		}
		sets = append(sets, p.Key+"="+v)
	}
	return sets, nil
}

func (g *Range) draw(r *rand.Rand) float64 {
	lo, hi := g.Lo, g.Hi
	if g.Int {
		hi++ // [lo, hi+1), then floor: every whole number in [lo, hi]
	}
	var x float64
	if g.Log {
		x = math.Exp(math.Log(lo) + r.Float64()*(math.Log(hi)-math.Log(lo)))
	} else {
		x = lo + r.Float64()*(hi-lo)
	}
	if g.Int {
		x = min(math.Floor(x), g.Hi)
	}
	return max(min(x, g.Hi), g.Lo)
}

// format writes a drawn number as --set takes it: a whole number for an int range, else six
// significant digits.
func (g *Range) format(x float64) string {
	if g.Int {
		return strconv.FormatInt(int64(x), 10)
	}
	return strconv.FormatFloat(x, 'g', 6, 64)
}

// flow writes a YAML value on one line ([128, 64] rather than a block list).
func flow(n *yaml.Node) (string, error) {
	c := *n
	setFlow(&c)
	b, err := yaml.Marshal(&c)
	if err != nil {
		return "", err
	}
	return strings.TrimSpace(string(b)), nil
}

func setFlow(n *yaml.Node) {
	if n.Kind == yaml.SequenceNode || n.Kind == yaml.MappingNode {
		n.Style = yaml.FlowStyle
	}
	content := make([]*yaml.Node, len(n.Content)) // a copy: the space's own nodes stay as read
	for i, c := range n.Content {
		cp := *c
		setFlow(&cp)
		content[i] = &cp
	}
	n.Content = content
}
