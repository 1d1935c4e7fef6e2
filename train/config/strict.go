package config

import (
	"errors"
	"fmt"
	"math"
	"reflect"
	"slices"
	"strconv"
	"strings"

	"gopkg.in/yaml.v3"
)

// Strict reading of a config: every key must exist, and integer keys must hold whole numbers.
// yaml.v3 alone would name Go types in its errors ("field datset not found in type
// config.DataConfig") and truncate batch_size: 1.5 to 1; this walk speaks in config keys and
// refuses instead.

var configType = reflect.TypeFor[Config]()

// valueDecoder is a config value that decodes itself (noise_multiplier: a number or auto)
// through the yaml.v2 form of the unmarshaler, which yaml.v3 honours and which lets the type
// live in a package that imports no YAML library (algorithm.NoiseMultiplier).
type valueDecoder interface {
	UnmarshalYAML(unmarshal func(any) error) error
}

// decodesItself reports whether values of type t decode themselves from YAML.
func decodesItself(t reflect.Type) bool {
	p := reflect.PointerTo(t)
	return p.Implements(reflect.TypeFor[yaml.Unmarshaler]()) || p.Implements(reflect.TypeFor[valueDecoder]())
}

// checkDocument walks a parsed YAML document against the Config schema, with the algorithm
// sections of r under optimizer; each error carries its line.
func (r *Algorithms) checkDocument(root *yaml.Node) error {
	doc := root
	if doc.Kind == yaml.DocumentNode && len(doc.Content) == 1 {
		doc = doc.Content[0]
	}
	var errs []error
	r.checkNode(doc, configType, "", func(n *yaml.Node, format string, args ...any) {
		errs = append(errs, fmt.Errorf("line %d: %s", n.Line, fmt.Sprintf(format, args...)))
	})
	return errors.Join(errs...)
}

type complaint func(n *yaml.Node, format string, args ...any)

// sectionType returns the type of the algorithm section called key under path (only
// optimizer has them).
func (r *Algorithms) sectionType(path, key string) (reflect.Type, bool) {
	if r == nil || path != "optimizer" {
		return nil, false
	}
	if a, ok := r.BySection(key); ok && a.NewSection != nil {
		return reflect.TypeOf(a.NewSection()), true
	}
	return nil, false
}

func (r *Algorithms) checkNode(n *yaml.Node, t reflect.Type, path string, bad complaint) {
	if n == nil || n.Tag == "!!null" {
		return
	}
	if decodesItself(t) { // the type checks itself (noise_multiplier: a number or auto)
		if err := n.Decode(reflect.New(t).Interface()); err != nil {
			bad(n, "%v", err)
		}
		return
	}
	if t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	switch t.Kind() {
	case reflect.Struct:
		if n.Kind != yaml.MappingNode {
			bad(n, "%s must be a section of keys (key: value lines), not %s", orTop(path), describeNode(n))
			return
		}
		for i := 0; i+1 < len(n.Content); i += 2 {
			k, v := n.Content[i], n.Content[i+1]
			ft, ok := r.keyType(t, path, k.Value)
			if !ok {
				bad(k, "unknown key %s%s", join(path, k.Value), r.suggest(path, k.Value))
				continue
			}
			r.checkNode(v, ft, join(path, k.Value), bad)
		}
	case reflect.Slice:
		if n.Kind != yaml.SequenceNode {
			bad(n, "%s must be a list, e.g. [a, b]", path)
			return
		}
		for i, e := range n.Content {
			r.checkNode(e, t.Elem(), fmt.Sprintf("%s[%d]", path, i), bad)
		}
	case reflect.Int, reflect.Int64, reflect.Uint64:
		switch {
		case n.Kind != yaml.ScalarNode || n.Tag != "!!int" && n.Tag != "!!float":
			bad(n, "%s = %s: must be a whole number", path, describe(n))
		case n.Tag == "!!float":
			f, err := strconv.ParseFloat(n.Value, 64)
			if err != nil || f != math.Trunc(f) || math.Abs(f) > 1<<53 {
				bad(n, "%s = %s: must be a whole number", path, n.Value)
			}
		case t.Kind() == reflect.Uint64 && strings.HasPrefix(strings.TrimSpace(n.Value), "-"):
			bad(n, "%s = %s: must not be negative", path, n.Value)
		}
	case reflect.Float64:
		if n.Kind != yaml.ScalarNode || n.Tag != "!!int" && n.Tag != "!!float" {
			bad(n, "%s = %s: must be a number", path, describe(n))
		}
	case reflect.Bool:
		if n.Kind != yaml.ScalarNode || n.Tag != "!!bool" {
			bad(n, "%s = %s: must be true or false", path, describe(n))
		}
	case reflect.String:
		if n.Kind != yaml.ScalarNode {
			bad(n, "%s = %s: must be a single value, not a list or a section", path, describe(n))
		}
	}
}

// describe renders a node for messages: its value, or what kind of node it is.
func describe(n *yaml.Node) string {
	switch n.Kind {
	case yaml.SequenceNode:
		return "a list"
	case yaml.MappingNode:
		return "a section"
	}
	return strconv.Quote(n.Value)
}

// keyType is the type of key in struct t at path: a field's (by its yaml tag) or an algorithm
// section's.
func (r *Algorithms) keyType(t reflect.Type, path, key string) (reflect.Type, bool) {
	for i := range t.NumField() {
		f := t.Field(i)
		if name, _, _ := strings.Cut(f.Tag.Get("yaml"), ","); name == key && name != "" {
			return f.Type, true
		}
	}
	return r.sectionType(path, key)
}

// configKeys lists every key path of the schema, sections and the algorithm sections of r
// included (list elements as path[]).
func (r *Algorithms) configKeys() []string {
	var out []string
	var walk func(t reflect.Type, path string)
	walk = func(t reflect.Type, path string) {
		if t.Kind() == reflect.Pointer {
			t = t.Elem()
		}
		if t.Kind() == reflect.Slice && t.Elem().Kind() == reflect.Struct {
			walk(t.Elem(), path+"[]")
			return
		}
		if path != "" {
			out = append(out, path) // sections are keys too
		}
		if t.Kind() != reflect.Struct || decodesItself(t) {
			return
		}
		for i := range t.NumField() {
			name, _, _ := strings.Cut(t.Field(i).Tag.Get("yaml"), ",")
			if name != "" { // the inline map of algorithm sections: below
				walk(t.Field(i).Type, join(path, name))
			}
		}
		if r != nil && path == "optimizer" {
			for _, name := range r.sectionNames() {
				st, _ := r.sectionType(path, name)
				walk(st, join(path, name))
			}
		}
	}
	walk(configType, "")
	return out
}

// suggest returns ": did you mean K?" for the valid key nearest to the unknown key name under
// section path (a sibling within a few edits, or the same name in another section), or "".
func (r *Algorithms) suggest(path, name string) string {
	section := strings.TrimRight(regexpIndex(path), ".")
	best, bestD := "", maxTypo(name)
	var elsewhere string
	for _, k := range r.configKeys() {
		dir, leaf := "", k
		if i := strings.LastIndex(k, "."); i >= 0 {
			dir, leaf = k[:i], k[i+1:]
		}
		if dir == section {
			if d := editDistance(name, leaf); d < bestD {
				best, bestD = k, d
			}
		} else if leaf == name && elsewhere == "" {
			elsewhere = k
		}
	}
	if best == "" {
		best = elsewhere
	}
	if best == "" {
		return " (configs/quickstart.yaml lists every key)"
	}
	return fmt.Sprintf(": did you mean %s? (configs/quickstart.yaml lists every key)", best)
}

// regexpIndex turns model.layers[3] into model.layers[] to match configKeys.
func regexpIndex(path string) string {
	var b strings.Builder
	skip := false
	for _, r := range path {
		switch {
		case r == '[':
			b.WriteString("[]")
			skip = true
		case r == ']':
			skip = false
		case !skip:
			b.WriteRune(r)
		}
	}
	return b.String()
}

// editDistance is the optimal-string-alignment distance between a and b: insertions,
// deletions, substitutions and transpositions of neighbours each count 1.
func editDistance(a, b string) int {
	d := make([][]int, len(a)+1)
	for i := range d {
		d[i] = make([]int, len(b)+1)
		d[i][0] = i
	}
	for j := range d[0] {
		d[0][j] = j
	}
	for i := 1; i <= len(a); i++ {
		for j := 1; j <= len(b); j++ {
			c := 1
			if a[i-1] == b[j-1] {
				c = 0
			}
			d[i][j] = min(d[i-1][j]+1, d[i][j-1]+1, d[i-1][j-1]+c)
			if i > 1 && j > 1 && a[i-1] == b[j-2] && a[i-2] == b[j-1] {
				d[i][j] = min(d[i][j], d[i-2][j-2]+1)
			}
		}
	}
	return d[len(a)][len(b)]
}

func join(path, key string) string {
	if path == "" {
		return key
	}
	return path + "." + key
}

// describeNode says what a YAML node is, for a message about a node of the wrong kind.
func describeNode(n *yaml.Node) string {
	switch n.Kind {
	case yaml.SequenceNode:
		return "a list (lines starting with \"- \"): remove the dashes"
	case yaml.AliasNode:
		return "an alias"
	}
	return fmt.Sprintf("the value %q", n.Value)
}

func orTop(path string) string {
	if path == "" {
		return "the config"
	}
	return path
}

// checkOverride checks one --set key.path=value against the schema before it is applied, so
// that its errors name the --set argument rather than a line of the re-serialised document.
func (r *Algorithms) checkOverride(o, key string, value *yaml.Node) error {
	t := configType
	parts := strings.Split(key, ".")
	for i, p := range parts {
		if t.Kind() == reflect.Pointer {
			t = t.Elem()
		}
		if t.Kind() != reflect.Struct || decodesItself(t) {
			return fmt.Errorf("--set %s: %s is a value, not a section", o, strings.Join(parts[:i], "."))
		}
		ft, ok := r.keyType(t, strings.Join(parts[:i], "."), p)
		if !ok {
			return fmt.Errorf("--set %s: unknown key %s%s", o, join(strings.Join(parts[:i], "."), p), r.suggest(strings.Join(parts[:i], "."), p))
		}
		t = ft
	}
	var errs []string
	r.checkNode(value, t, key, func(_ *yaml.Node, format string, args ...any) {
		errs = append(errs, fmt.Sprintf(format, args...))
	})
	if len(errs) > 0 {
		return fmt.Errorf("--set %s: %s", o, strings.Join(errs, "; "))
	}
	// Decode the value alone into the key's type, so that a wrong type is reported here.
	v := reflect.New(t)
	if err := value.Decode(v.Interface()); err != nil {
		return fmt.Errorf("--set %s: %s does not take %q: %s", o, key, value.Value, yamlReason(err))
	}
	return nil
}

// yamlReason strips yaml.v3's Go type names from a decoding error.
func yamlReason(err error) string {
	s := err.Error()
	if i := strings.LastIndex(s, "cannot unmarshal "); i >= 0 {
		s = s[i:]
		s = strings.NewReplacer("!!str", "text", "!!int", "a whole number", "!!float", "a number",
			"!!bool", "true/false", "!!seq", "a list", "!!map", "a section").Replace(s)
		if j := strings.Index(s, " into "); j >= 0 {
			s = s[:j]
		}
	}
	return s
}

// exclusive lists config keys of which setting one through --set clears the others in the
// file (the run's length is given either in epochs or in steps).
var exclusive = [][]string{{"training.epochs", "training.steps"}}

// clearedBy returns the keys that an override of key clears.
func clearedBy(key string) []string {
	for _, group := range exclusive {
		if slices.Contains(group, key) {
			return slices.DeleteFunc(slices.Clone(group), func(k string) bool { return k == key })
		}
	}
	return nil
}

// nearest returns ": did you mean X?" for the word of set within a few edits of name, or "".
func nearest(name string, set []string) string {
	best, bestD := "", maxTypo(name)
	for _, w := range set {
		if d := editDistance(name, w); d < bestD {
			best, bestD = w, d
		}
	}
	if best == "" {
		return ""
	}
	return fmt.Sprintf(": did you mean %s?", best)
}

// maxTypo bounds the edit distance (exclusive) at which a word still counts as a typo of name.
func maxTypo(name string) int { return 1 + max(2, len(name)/3) }
