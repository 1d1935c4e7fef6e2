package train

import (
	"bytes"
	"strings"
	"testing"

	"github.com/sirupsen/logrus"
)

// Feature extraction logs every 10% of a split, with the time left.
func TestFeatureProgressLogsEveryTenPercent(t *testing.T) {
	var b bytes.Buffer
	log := logrus.New()
	log.SetOutput(&b)
	p := featureProgress(log)
	for done := 0; done <= 1000; done += 10 { // called about every percent
		p("train", done, 1000)
	}
	lines := strings.Split(strings.TrimSpace(b.String()), "\n")
	if len(lines) != 10 || !strings.Contains(lines[0], "train split 10% (100 of 1000 images), about") || !strings.Contains(lines[9], "100% (1000 of 1000") {
		t.Errorf("%d lines:\n%s", len(lines), b.String())
	}
}
