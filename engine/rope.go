package engine

import "math"

// Rotary position tables, computed as Hugging Face transformers computes
// them (modeling_rope_utils.py and the models' RotaryEmbedding), in float32
// for every model and every element type T:
//
//	inv_freq[i] = 1 / base^(float32(2i)/float32(HeadDim))   (i < HeadDim/2)
//	            then rescaled per Config.Rope (linear, llama3, yarn)
//	angle       = float32(pos) · inv_freq[i]                (rounded to float32)
//	cos, sin    = float32(cos(angle)), float32(sin(angle)) · attention factor
//
// Every step is one float32 operation rounded as torch rounds it, with Python
// scalars (base, factors, 2π) cast to float32 where torch casts them. Two
// steps are transcendental functions where torch's float32 kernels (Sleef,
// ≤ 1 ULP) and ours need not agree bit for bit: the power base^e, which we
// take in float64 and round (the correctly rounded float32), and cos/sin of
// the float32 angle, also in float64 then rounded. Each may differ from
// torch's by one float32 ULP (≈ 6e-8 relative) in rare elements; a float64
// table instead would differ by ≈ pos·6e-8 rad, 2.5e-4 rad at position 4096.
// A float64 model uses the same float32 tables (HF's .double() models do
// too: their forward casts inv_freq and positions to float32).

// rope holds the rotary tables: cos and sin of position·θ_i for every
// position < Context and i < HeadDim/2, already multiplied by the attention
// factor (yarn; 1 otherwise).
type rope[T Float] struct {
	half     int
	cos, sin []T // Context×half
}

func newRope[T Float](cfg Config) rope[T] {
	inv, attn := ropeInvFreq(cfg)
	half := len(inv)
	r := rope[T]{half: half, cos: make([]T, cfg.Context*half), sin: make([]T, cfg.Context*half)}
	for pos := 0; pos < cfg.Context; pos++ {
		p := float32(pos)
		for i, f := range inv {
			angle := p * f // one float32 product, as torch's matmul of k = 1
			c, s := float32(math.Cos(float64(angle))), float32(math.Sin(float64(angle)))
			if attn != 1 {
				c, s = c*attn, s*attn
			}
			r.cos[pos*half+i], r.sin[pos*half+i] = T(c), T(s)
		}
	}
	return r
}

// ropeInvFreq returns the HeadDim/2 inverse frequencies and the attention
// factor (yarn's scale on cos and sin; 1 otherwise) in float32.
func ropeInvFreq(cfg Config) ([]float32, float32) {
	dim := cfg.headDim()
	half := dim / 2
	base := float32(cfg.ropeTheta())
	// pos_freqs = base ** (arange(0, dim, 2).float() / dim)
	posFreq := make([]float32, half)
	for i := range posFreq {
		e := float32(2*i) / float32(dim)
		posFreq[i] = float32(math.Pow(float64(base), float64(e)))
	}
	inv := make([]float32, half)
	for i, p := range posFreq {
		inv[i] = 1 / p
	}
	rs := cfg.Rope
	if rs == nil {
		return inv, 1
	}
	switch rs.Type {
	case "linear":
		f := float32(rs.Factor)
		for i := range inv {
			inv[i] /= f
		}
	case "llama3":
		llama3InvFreq(inv, rs)
	case "yarn":
		return yarnInvFreq(cfg, posFreq, rs)
	}
	return inv, 1
}

// llama3InvFreq rescales inv in place: wavelengths longer than
// old/low_freq_factor are divided by factor, shorter than
// old/high_freq_factor kept, and those between blended smoothly.
func llama3InvFreq(inv []float32, rs *RopeScaling) {
	old := float64(rs.OriginalContext)
	lowWave, highWave := float32(old/rs.LowFreqFactor), float32(old/rs.HighFreqFactor)
	factor, low := float32(rs.Factor), float32(rs.LowFreqFactor)
	span := float32(rs.HighFreqFactor - rs.LowFreqFactor) // a Python float difference, then cast
	twoPi := float32(2 * math.Pi)
	for i, f := range inv {
		wave := twoPi / f
		scaled := f
		if wave > lowWave {
			scaled = f / factor
		}
		if !(wave < highWave) && !(wave > lowWave) {
			smooth := (float32(old)/wave - low) / span
			scaled = (1-smooth)*scaled/factor + smooth*scaled
		}
		inv[i] = scaled
	}
}

// yarnInvFreq blends interpolated (1/(factor·p)) and extrapolated (1/p)
// frequencies over the correction range of beta_fast and beta_slow
// rotations within L = OriginalContext (Context when 0) positions, and
// returns the attention factor (0.1·ln(factor)+1 unless given).
func yarnInvFreq(cfg Config, posFreq []float32, rs *RopeScaling) ([]float32, float32) {
	dim := cfg.headDim()
	base := cfg.ropeTheta()
	L := float64(rs.OriginalContext)
	if L == 0 {
		L = float64(cfg.Context)
	}
	attn := rs.AttentionFactor
	if attn == 0 {
		attn = 0.1*math.Log(rs.Factor) + 1
	}
	fast, slow := rs.BetaFast, rs.BetaSlow
	if fast == 0 {
		fast = 32
	}
	if slow == 0 {
		slow = 1
	}
	corr := func(rot float64) float64 {
		return float64(dim) * math.Log(L/(rot*2*math.Pi)) / (2 * math.Log(base))
	}
	lo := max(math.Floor(corr(fast)), 0)
	hi := min(math.Ceil(corr(slow)), float64(dim-1))
	if lo == hi {
		hi += 0.001
	}
	factor := float32(rs.Factor)
	den := float32(hi - lo)
	inv := make([]float32, len(posFreq))
	for i, p := range posFreq {
		extra, inter := 1/p, 1/(factor*p)
		ramp := min(max((float32(i)-float32(lo))/den, 0), 1)
		ef := 1 - ramp // the extrapolation weight
		inv[i] = inter*(1-ef) + extra*ef
	}
	return inv, float32(attn)
}

// apply rotates one head vector x (length 2·half) at position pos; with
// inverse it applies the transpose rotation (the backward pass).
func (r rope[T]) apply(x []T, pos int, inverse bool) {
	h := r.half
	cs, sn := r.cos[pos*h:pos*h+h], r.sin[pos*h:pos*h+h]
	x1, x2 := x[:h], x[h:2*h]
	for i := 0; i < h; i++ {
		c, s := cs[i], sn[i]
		if inverse {
			s = -s
		}
		a, b := x1[i], x2[i]
		x1[i] = a*c - b*s
		x2[i] = b*c + a*s
	}
}

// ropeRows rotates every head of rows [0, n) of x (n×heads·HeadDim);
// positions come from pos(i). With inverse it applies the transposed
// rotation.
func ropeRows[T Float](r rope[T], heads, hd, n int, x []T, pos func(i int) int, inverse bool) {
	w := heads * hd
	for i := 0; i < n; i++ {
		pi := pos(i)
		for h := 0; h < heads; h++ {
			r.apply(x[i*w+h*hd:i*w+(h+1)*hd], pi, inverse)
		}
	}
}
