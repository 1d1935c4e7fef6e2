package bench

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"strings"
	"testing"
)

func TestMedian(t *testing.T) {
	v := []float64{3, 1, 2}
	if got := Median(v); got != 2 || v[0] != 3 {
		t.Errorf("Median(%v) = %v, want 2 and the input unchanged", v, got)
	}
	if got := Median([]float64{4, 1, 3, 2}); got != 2.5 {
		t.Errorf("Median of 1..4 = %v, want 2.5", got)
	}
}

func TestSpec(t *testing.T) {
	if s, err := Spec("mlp"); err != nil || s.Kind != "mlp" || len(s.Hidden) != 1 || s.Hidden[0] != 512 {
		t.Errorf("Spec(mlp) = %+v, %v", s, err)
	}
	if s, err := Spec("cnn"); err != nil || s.Kind != "cnn-tramer-boneh" {
		t.Errorf("Spec(cnn) = %+v, %v", s, err)
	}
	if _, err := Spec("vgg"); err == nil {
		t.Error("Spec(vgg) accepted")
	}
}

func TestThroughput(t *testing.T) {
	r, err := Throughput(ThroughputConfig{Model: "mlp", Engine: "auto", Batch: 8, Steps: 2, Warmup: 1})
	if err != nil {
		t.Fatal(err)
	}
	if r.Params != 784*512+512+512*10+10 || r.Batch != 8 || r.Steps != 2 || !(r.SGDMsPerStep > 0) || !(r.DPSGDMsPerStep > 0) || r.Ratio != r.DPSGDMsPerStep/r.SGDMsPerStep {
		t.Errorf("%+v", r)
	}
	if kib, err := PeakRSS(ThroughputConfig{Model: "mlp", Engine: "auto", Batch: 4, Steps: 1}, "dpsgd"); err != nil || kib <= 0 {
		t.Errorf("PeakRSS = %d, %v", kib, err)
	}
	var out bytes.Buffer
	r.WriteText(&out)
	lines := 5
	if r.BLASAdvice != "" {
		lines++ // the note on OpenBLAS's kernels
	}
	if !strings.Contains(out.String(), "mlp (") || strings.Count(out.String(), "\n") != lines {
		t.Errorf("report:\n%s", out.String())
	}
}

func TestMBCDAndULR(t *testing.T) {
	m, err := MBCD(MBCDConfig{Hidden: []int{16, 8}, Batch: 24, Steps: 1, Warmup: 1})
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	m.WriteText(&out)
	if !strings.Contains(out.String(), "mlp 784-16-8-10 no bias (12752 parameters), batch 24") || !(m.MBCDMs > 0) || !(m.DPSGDMs > 0) {
		t.Errorf("MBCD %+v:\n%s", m, out.String())
	}
	u, err := ULR(ULRConfig{Hidden: []int{8, 4}, Copies: []int{1, 2}, Modes: []string{"paper", "certified"}, Sigma: 1, Batch: 12, Rounds: 1})
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"DP-SGD", "DP-ULR paper K=1", "DP-ULR paper K=2", "DP-ULR certified K=1", "DP-ULR certified K=2"}
	if strings.Join(u.Names, ",") != strings.Join(want, ",") || len(u.Ms) != len(want) {
		t.Errorf("ULR names %q, %d medians; want %q", u.Names, len(u.Ms), want)
	}
	if _, err := ULR(ULRConfig{Modes: []string{"fast"}}); err == nil {
		t.Error("mode fast accepted")
	}
	if injectedSigma("certified", 0.5) != 0.5 || injectedSigma("paper", 0.5) != 0 {
		t.Error("injected σ: certified mode takes the public constant, paper mode the controller (0)")
	}
}

// A child's peak memory is its own: a parent that holds 256 MB when it starts the child must
// not show in the child's figure (ru_maxrss alone would carry it across fork and exec).
func TestPeakIsTheChildsOwn(t *testing.T) {
	if os.Getenv("DPTRAIN_PEAK_CHILD") == "1" {
		fmt.Println(peakKiB())
		return
	}
	if runtime.GOOS != "linux" {
		t.Skip("VmHWM is Linux's")
	}
	held := make([]byte, 256<<20)
	for i := range held {
		if i%4096 == 0 {
			held[i] = 1
		}
	}
	cmd := exec.Command(os.Args[0], "-test.run", "^TestPeakIsTheChildsOwn$")
	cmd.Env = append(os.Environ(), "DPTRAIN_PEAK_CHILD=1")
	out, err := cmd.Output()
	if err != nil {
		t.Fatal(err)
	}
	kib, err := strconv.ParseInt(strings.Fields(string(out))[0], 10, 64)
	if err != nil {
		t.Fatalf("child printed %q", out)
	}
	if kib <= 0 || kib > 128<<10 {
		t.Errorf("child's peak %d KiB with a parent holding 256 MB: the parent's peak leaked into it", kib)
	}
	runtime.KeepAlive(held)
}
