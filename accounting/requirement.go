package accounting

import (
	"errors"
	"fmt"
	"strings"
)

// RequirementError is an accountant's refusal of a run or a step: the declaration lacks what
// the accountant's theorem needs. It names the declaration fields at stake, so that a
// front-end can say which of its own settings to change (Message) without parsing the text.
type RequirementError struct {
	// Accountant is the accountant that refuses ("" when the caller's error names it).
	Accountant string
	// Theorem is the result whose assumption is not met, as its paper numbers it.
	Theorem string
	// Reason says what is wrong.
	Reason string
	// Fix says what to do, with one %s verb for each of Fields, in order.
	Fix string
	// Fields are the declaration fields at stake: "Run.LastIterateOnly", "Step.MinBatchSize".
	Fields []string
}

func (e *RequirementError) Error() string { return e.Message(nil) }

// Message is the error's text with name(field) in place of each declaration field: the
// setting a front-end's user writes for it (a config key, a flag). A nil name, or one that
// returns "", keeps the field's own name.
func (e *RequirementError) Message(name func(field string) string) string {
	args := make([]any, len(e.Fields))
	for i, f := range e.Fields {
		args[i] = f
		if name != nil {
			if s := name(f); s != "" {
				args[i] = s
			}
		}
	}
	var b strings.Builder
	if e.Accountant != "" {
		b.WriteString(e.Accountant + ": ")
	}
	b.WriteString(e.Reason)
	if e.Fix != "" {
		b.WriteString(": ")
		fmt.Fprintf(&b, e.Fix, args...)
	}
	return b.String()
}

// Describe returns err's text with the declaration fields of the *RequirementError it wraps,
// if any, named by name (RequirementError.Message); the text of the errors wrapping it is
// kept.
func Describe(err error, name func(field string) string) string {
	var re *RequirementError
	if err == nil || name == nil || !errors.As(err, &re) {
		if err == nil {
			return ""
		}
		return err.Error()
	}
	full, own := err.Error(), re.Error()
	i := strings.LastIndex(full, own)
	if i < 0 {
		return re.Message(name)
	}
	return full[:i] + re.Message(name) + full[i+len(own):]
}
