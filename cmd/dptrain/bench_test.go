package main

import (
	"encoding/json"
	"testing"
)

func TestBenchThroughput(t *testing.T) {
	out, _, err := runDptrain(t, "bench", "throughput", "--model", "mlp", "--batch", "32", "--steps", "2", "--warmup", "1", "--no-memory", "--json")
	if err != nil {
		t.Fatal(err)
	}
	var r benchResult
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
