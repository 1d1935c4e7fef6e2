package train

import "github.com/sirupsen/logrus"

// Logger receives a run's operator log: progress lines and warnings. Both may describe the
// private data (they are the operator's, like private/), so never publish them. A
// *logrus.Logger or *logrus.Entry is one; a Logger that is also a logrus.FieldLogger gets the
// rank of a data-parallel run as a field.
type Logger interface {
	Infof(format string, args ...any)
	Warnf(format string, args ...any)
}

// discard is the Logger of a run given none.
type discard struct{}

func (discard) Infof(string, ...any) {}
func (discard) Warnf(string, ...any) {}

// rankLogger is the Logger of a data-parallel rank other than 0: warnings only, each naming
// the rank; rank 0 reports progress for the run.
type rankLogger struct {
	l    Logger
	rank int
}

func (rankLogger) Infof(string, ...any) {}

func (r rankLogger) Warnf(format string, args ...any) {
	if f, ok := r.l.(logrus.FieldLogger); ok {
		f.WithField("rank", r.rank).Warnf(format, args...)
		return
	}
	r.l.Warnf("rank %d: "+format, append([]any{r.rank}, args...)...)
}
