package main

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/dptrain/dptrain/cmd/dptrain/internal/bench"
)

func TestBenchThroughput(t *testing.T) {
	out, _, err := runDptrain(t, "bench", "throughput", "--model", "mlp", "--batch", "32", "--steps", "2", "--warmup", "1", "--no-memory", "--json")
	if err != nil {
		t.Fatal(err)
	}
	var r bench.Result
	if err := json.Unmarshal([]byte(out), &r); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	// Timing ratios are measured by `make bench`, not asserted here: the machine is shared.
	if r.Params != 784*512+512+512*10+10 || r.Batch != 32 || !(r.SGDMsPerStep > 0) || !(r.DPSGDMsPerStep > 0) || !(r.Ratio > 0) || r.BLAS == "" {
		t.Errorf("%+v", r)
	}
	if _, _, err := runDptrain(t, "bench", "throughput", "--model", "vgg"); err == nil {
		t.Error("unknown model accepted")
	}
}

func TestBenchMBCD(t *testing.T) {
	out, _, err := runDptrain(t, "bench", "mbcd", "--hidden", "16,8", "--batch", "24", "--steps", "1", "--warmup", "1")
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"mlp 784-16-8-10 no bias (12752 parameters), batch 24", "DP-MBCD step", "DP-SGD step", "ratio"} {
		if !strings.Contains(out, want) {
			t.Errorf("bench mbcd output lacks %q:\n%s", want, out)
		}
	}
	if _, _, err := runDptrain(t, "bench", "mbcd", "--warmup", "0"); err == nil {
		t.Error("--warmup 0 accepted (the first DP-MBCD visit initialises the auxiliaries)")
	}
}

func TestBenchULR(t *testing.T) {
	out, _, err := runDptrain(t, "bench", "ulr", "--hidden", "8,4", "--batch", "12", "--copies", "1,2", "--rounds", "1", "--warmup", "0")
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"mlp 784-8-4-10 gelu", "batch 12", "DP-SGD", "DP-ULR paper K=1", "DP-ULR certified K=2", "× DP-SGD"} {
		if !strings.Contains(out, want) {
			t.Errorf("bench ulr output lacks %q:\n%s", want, out)
		}
	}
	if _, _, err := runDptrain(t, "bench", "ulr", "--modes", "fast"); err == nil {
		t.Error("--modes fast accepted")
	}
}
