package train

import (
	"context"
	"strings"
	"testing"

	"github.com/dptrain/dptrain/train/config"
)

// δ must be below 1/n for the run's n (4800 here), unless privacy.allow_large_delta is set.
func TestDeltaBelowOneOverN(t *testing.T) {
	for _, tc := range []struct {
		sets []string
		want string // "" for no error
	}{
		{[]string{"privacy.delta=1e-4"}, ""},
		{[]string{"privacy.delta=2.5e-4"}, "privacy.delta = 0.00025 is not below 1/n = 1/4800"},
		{[]string{"privacy.delta=5e-4", "data.train_subset=1000"}, ""},
		{[]string{"privacy.delta=1e-3", "data.train_subset=1000"}, "1/n = 1/1000"},
		{[]string{"privacy.delta=2.5e-4", "privacy.allow_large_delta=true"}, ""},
	} {
		cfg, err := config.ParseConfig([]byte(synthetic), append(tc.sets, "output.dir="+t.TempDir()))
		if err != nil {
			t.Fatal(err)
		}
		_, err = New(context.Background(), cfg, Options{})
		if (tc.want == "") != (err == nil) || err != nil && !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%v: error %v, want %q", tc.sets, err, tc.want)
		}
	}
}
