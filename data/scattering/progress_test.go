package scattering

import (
	"fmt"
	"slices"
	"testing"
)

// Features reports its progress per split, from 0 to every image, in order.
func TestFeaturesReportProgress(t *testing.T) {
	var calls []string
	opts := Options{J: 2, L: 4, Progress: func(split string, done, total int) {
		calls = append(calls, fmt.Sprintf("%s %d/%d", split, done, total))
	}}
	if _, err := Features(t.Context(), tinyDataset(4), opts); err != nil {
		t.Fatal(err)
	}
	want := []string{"train 0/4", "train 1/4", "train 2/4", "train 3/4", "train 4/4", "test 0/2", "test 1/2", "test 2/2"}
	if !slices.Equal(calls, want) {
		t.Errorf("progress calls %q, want %q", calls, want)
	}
}
