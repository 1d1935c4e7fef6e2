package train

import (
	"bytes"
	"fmt"
	"strings"
	"testing"

	"github.com/sirupsen/logrus"
)

// lines is a Logger that keeps what it is given.
type lines []string

func (l *lines) Infof(f string, a ...any) { *l = append(*l, "info "+fmt.Sprintf(f, a...)) }
func (l *lines) Warnf(f string, a ...any) { *l = append(*l, "warn "+fmt.Sprintf(f, a...)) }

// A rank other than 0 passes on warnings only, naming its rank: as a field to a logrus
// logger, as a prefix to any other Logger.
func TestRankLogger(t *testing.T) {
	var buf bytes.Buffer
	lr := logrus.New()
	lr.SetOutput(&buf)
	lr.SetFormatter(&logrus.TextFormatter{DisableTimestamp: true})
	r := rankLogger{l: lr, rank: 3}
	r.Infof("progress %d", 1)
	r.Warnf("clipped %d", 2)
	if got := buf.String(); strings.Contains(got, "progress") || !strings.Contains(got, "clipped 2") || !strings.Contains(got, "rank=3") {
		t.Errorf("logrus output %q: want the warning with rank=3 and no progress line", got)
	}

	var l lines
	r = rankLogger{l: &l, rank: 2}
	r.Infof("progress")
	r.Warnf("clipped %d", 5)
	if want := []string{"warn rank 2: clipped 5"}; fmt.Sprint(l) != fmt.Sprint(want) {
		t.Errorf("got %q, want %q", l, want)
	}
}
