package blascore

import "testing"

func TestForce(t *testing.T) {
	for _, c := range []struct {
		detected     string
		avx512, bf16 bool
		want         string
	}{
		{"Prescott", true, true, "Cooperlake"}, // 0.3.21 on an Emerald Rapids Xeon
		{"Zen", true, true, "Cooperlake"},      // on AMD's Zen 5
		{"Haswell", true, false, "SkylakeX"},   // an AVX-512 CPU without BF16
		{"SkylakeX", true, true, ""},           // an AVX-512 core stands
		{"Cooperlake", true, true, ""},         //
		{"SapphireRapids", true, true, ""},     //
		{"Haswell", false, false, ""},          // no AVX-512: OpenBLAS's pick stands
		{"", true, true, ""},                   // not OpenBLAS: nothing to force
	} {
		if got := Force(c.detected, c.avx512, c.bf16); got != c.want {
			t.Errorf("Force(%q, avx512 %v, bf16 %v) = %q, want %q", c.detected, c.avx512, c.bf16, got, c.want)
		}
	}
}
