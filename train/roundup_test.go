package train

import (
	"strconv"
	"testing"
)

func TestFormatUpNeverBelow(t *testing.T) {
	for _, tc := range []struct {
		x      float64
		digits int
		want   string
	}{
		{0.6123452, 6, "0.612346"},
		{0.6123458, 6, "0.612346"},
		{0.612345, 6, "0.612345"},
		{1.1, 5, "1.1"},
		{9.999991, 5, "10"},
		{1.23456789e-3, 3, "0.00124"},
		{123456.1, 5, "1.2346e+05"},
	} {
		got := FormatUp(tc.x, tc.digits)
		if got != tc.want {
			t.Errorf("FormatUp(%v, %d) = %s, want %s", tc.x, tc.digits, got, tc.want)
		}
		if v, _ := strconv.ParseFloat(got, 64); v < tc.x {
			t.Errorf("FormatUp(%v, %d) = %s is below x", tc.x, tc.digits, got)
		}
	}
}
