package engine

import "math"

// expf returns eˣ in float32 arithmetic, within 2 ulp of the exact value
// over the float32 range: x = n·ln2 + r with |r| ≤ ln2/2, eʳ from a degree-7
// polynomial, then scaled by 2ⁿ through the exponent bits. It is several
// times cheaper than math.Exp and is used only on float32 paths.
func expf(x float32) float32 {
	const (
		log2e = 1.44269504088896341
		ln2hi = 0.693359375
		ln2lo = -2.12194440e-4
	)
	switch {
	case x != x:
		return x
	case x > 88.72283:
		return float32(math.Inf(1))
	case x < -87.33654:
		return 0
	}
	fn := float32(math.Floor(float64(x*log2e + 0.5)))
	r := x - fn*ln2hi - fn*ln2lo
	z := r * r
	p := ((((((1.9875691500e-4*r+1.3981999507e-3)*r+8.3334519073e-3)*r+4.1665795894e-2)*r+
		1.6666665459e-1)*r+5.0000001201e-1)*z + r) + 1
	n := int32(fn)
	if n > 127 { // 2ⁿ itself overflows though the product may not
		return p * math.Float32frombits(uint32(n+126)<<23) * 2
	}
	if n < -126 { // result would be subnormal: scale in two steps
		return p * math.Float32frombits(uint32(n+127+64)<<23) * math.Float32frombits(uint32(127-64)<<23)
	}
	return p * math.Float32frombits(uint32(n+127)<<23)
}

// swiglu32 is swiglu's float32 body, with σ through expf.
func swiglu32(g, u, h, sg []float32) {
	for i := range h {
		gv := g[i]
		s := 1 / (1 + expf(-gv))
		if sg != nil {
			sg[i] = s
		}
		h[i] = gv * s * u[i]
	}
}
