package models

import "testing"

// BLASAdvice speaks only when OpenBLAS runs kernels without AVX-512 on a CPU that has it.
func TestAVX512Kernels(t *testing.T) {
	for _, c := range []struct {
		kernel string
		want   bool
	}{{"Haswell", false}, {"Zen", false}, {"Prescott", false}, {"SkylakeX", true}, {"Cooperlake", true}, {"go", true}} {
		if got := avx512Kernels(c.kernel); got != c.want {
			t.Errorf("avx512Kernels(%q) = %v, want %v", c.kernel, got, c.want)
		}
	}
	if adv := BLASAdvice(); adv != "" && (!cpu512() || avx512Kernels(BLASKernel())) {
		t.Errorf("BLASAdvice() = %q with kernel %s, AVX-512 %v", adv, BLASKernel(), cpu512())
	}
}
