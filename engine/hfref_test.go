package engine

import (
	"context"
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/tandemrl/tandem/engine/kernels"
)

// A naive float64 transcription of Hugging Face's Llama / Qwen2 / Qwen3
// forward (modeling_llama.py, modeling_qwen2.py, modeling_qwen3.py and
// modeling_rope_utils.py), written from the formulas with plain loops and
// no code shared with the engine: per-head attention with repeat_kv, q/k
// RMSNorm before RoPE, projection biases, the tied head and the rope
// scalings, with RoPE tables rounded to float32 step by step as torch
// computes them. LoRA is applied as W + s·B·A.

// refRope returns cos and sin tables [pos][HeadDim] (halves repeated, as
// torch.cat((freqs, freqs))) following modeling_rope_utils.py in float32.
func refRope(cfg Config, positions int) (cos, sin [][]float64) {
	dim := cfg.HeadDim
	if dim == 0 {
		dim = cfg.Dim / cfg.Heads
	}
	base := cfg.RopeTheta
	if base == 0 {
		base = 10000
	}
	f32 := func(x float64) float64 { return float64(float32(x)) }
	// base ** (arange(0, dim, 2).float() / dim), then 1 / that
	pos := make([]float64, dim/2)
	inv := make([]float64, dim/2)
	for j := range pos {
		exponent := f32(f32(float64(2*j)) / f32(float64(dim)))
		pos[j] = f32(math.Pow(f32(base), exponent))
		inv[j] = f32(1 / pos[j])
	}
	attn := 1.0
	if rs := cfg.Rope; rs != nil {
		switch rs.Type {
		case "linear":
			for j := range inv {
				inv[j] = f32(inv[j] / f32(rs.Factor))
			}
		case "llama3":
			old := float64(rs.OriginalContext)
			lowWavelen, highWavelen := old/rs.LowFreqFactor, old/rs.HighFreqFactor
			for j := range inv {
				wavelen := f32(f32(2*math.Pi) / inv[j])
				llama := inv[j]
				if wavelen > f32(lowWavelen) {
					llama = f32(inv[j] / f32(rs.Factor))
				}
				smooth := f32(f32(f32(f32(old)/wavelen)-f32(rs.LowFreqFactor)) / f32(rs.HighFreqFactor-rs.LowFreqFactor))
				smoothed := f32(f32(f32(f32(1-smooth)*llama)/f32(rs.Factor)) + f32(smooth*llama))
				if !(wavelen < f32(highWavelen)) && !(wavelen > f32(lowWavelen)) {
					llama = smoothed
				}
				inv[j] = llama
			}
		case "yarn":
			L := float64(rs.OriginalContext)
			if L == 0 {
				L = float64(cfg.Context)
			}
			attn = rs.AttentionFactor
			if attn == 0 {
				attn = 0.1*math.Log(rs.Factor) + 1
			}
			betaFast, betaSlow := rs.BetaFast, rs.BetaSlow
			if betaFast == 0 {
				betaFast = 32
			}
			if betaSlow == 0 {
				betaSlow = 1
			}
			corrDim := func(rot float64) float64 {
				return float64(dim) * math.Log(L/(rot*2*math.Pi)) / (2 * math.Log(base))
			}
			low := math.Max(math.Floor(corrDim(betaFast)), 0)
			high := math.Min(math.Ceil(corrDim(betaSlow)), float64(dim-1))
			if low == high {
				high += 0.001
			}
			for j := range inv {
				extrapolation := f32(1 / pos[j])
				interpolation := f32(1 / f32(f32(rs.Factor)*pos[j]))
				ramp := math.Min(math.Max(f32(f32(float64(j)-f32(low))/f32(high-low)), 0), 1)
				extraFactor := f32(1 - ramp)
				inv[j] = f32(f32(interpolation*f32(1-extraFactor)) + f32(extrapolation*extraFactor))
			}
		}
	}
	cos, sin = make([][]float64, positions), make([][]float64, positions)
	for p := range positions {
		cos[p], sin[p] = make([]float64, dim), make([]float64, dim)
		for j := range inv {
			angle := f32(f32(float64(p)) * inv[j])
			c, s := f32(math.Cos(angle)), f32(math.Sin(angle))
			if attn != 1 {
				c, s = f32(c*f32(attn)), f32(s*f32(attn))
			}
			cos[p][j], cos[p][j+dim/2] = c, c
			sin[p][j], sin[p][j+dim/2] = s, s
		}
	}
	return cos, sin
}

// refLinear returns x·(W + s·B·A)ᵀ + bias for one row; W is out×in.
func refLinear(x, w []float64, out int, bias []float64, lp *LoraPair[float64], s float64) []float64 {
	in := len(x)
	y := make([]float64, out)
	for o := 0; o < out; o++ {
		acc := 0.0
		for i := 0; i < in; i++ {
			wi := w[o*in+i]
			if lp != nil {
				for r := 0; r < lp.Rank; r++ {
					wi += s * lp.B[o*lp.Rank+r] * lp.A[r*in+i]
				}
			}
			acc += x[i] * wi
		}
		if bias != nil {
			acc += bias[o]
		}
		y[o] = acc
	}
	return y
}

func refRMSNorm(x, w []float64, eps float64) []float64 {
	ss := 0.0
	for _, v := range x {
		ss += v * v
	}
	r := 1 / math.Sqrt(ss/float64(len(x))+eps)
	y := make([]float64, len(x))
	for i, v := range x {
		y[i] = w[i] * (v * r)
	}
	return y
}

// refRotate applies q·cos + rotate_half(q)·sin, rotate_half(q) = (−q2, q1).
func refRotate(q, cos, sin []float64) []float64 {
	h := len(q) / 2
	out := make([]float64, len(q))
	for i := range q {
		var rot float64
		if i < h {
			rot = -q[i+h]
		} else {
			rot = q[i-h]
		}
		out[i] = q[i]*cos[i] + rot*sin[i]
	}
	return out
}

// refLogSoftmax returns, for every position of seq, the log-softmax over the
// vocabulary of the next-token logits.
func refLogSoftmax(m *Model[float64], ad *Adapter[float64], seq []int) [][]float64 {
	cfg := m.Config
	eps := cfg.NormEps
	if eps == 0 {
		eps = 1e-5
	}
	hd := cfg.HeadDim
	if hd == 0 {
		hd = cfg.Dim / cfg.Heads
	}
	kvh := cfg.KVHeads
	if kvh == 0 {
		kvh = cfg.Heads
	}
	nRep := cfg.Heads / kvh
	s := 0.0
	if ad != nil {
		s = ad.Lora.alpha() / float64(ad.Lora.Rank)
	}
	pair := func(l int, f func(*BlockAdapter[float64]) *LoraPair[float64]) *LoraPair[float64] {
		if ad == nil {
			return nil
		}
		return f(&ad.Blocks[l])
	}
	cos, sin := refRope(cfg, len(seq))
	n := len(seq)
	h := make([][]float64, n)
	for t, tok := range seq {
		h[t] = append([]float64(nil), m.Embed[tok*cfg.Dim:(tok+1)*cfg.Dim]...)
	}
	for l := range m.Blocks {
		b := &m.Blocks[l]
		q := make([][][]float64, n) // [t][head][hd]
		k := make([][][]float64, n)
		v := make([][][]float64, n)
		for t := range n {
			xn := refRMSNorm(h[t], b.AttnNorm, eps)
			qf := refLinear(xn, b.Q, cfg.Heads*hd, b.QBias, pair(l, func(a *BlockAdapter[float64]) *LoraPair[float64] { return a.Q }), s)
			kf := refLinear(xn, b.K, kvh*hd, b.KBias, pair(l, func(a *BlockAdapter[float64]) *LoraPair[float64] { return a.K }), s)
			vf := refLinear(xn, b.V, kvh*hd, b.VBias, pair(l, func(a *BlockAdapter[float64]) *LoraPair[float64] { return a.V }), s)
			for hh := range cfg.Heads {
				qh := qf[hh*hd : (hh+1)*hd]
				if cfg.QKNorm {
					qh = refRMSNorm(qh, b.QNorm, eps)
				}
				q[t] = append(q[t], refRotate(qh, cos[t], sin[t]))
			}
			for g := range kvh {
				kh := kf[g*hd : (g+1)*hd]
				if cfg.QKNorm {
					kh = refRMSNorm(kh, b.KNorm, eps)
				}
				k[t] = append(k[t], refRotate(kh, cos[t], sin[t]))
				v[t] = append(v[t], vf[g*hd:(g+1)*hd])
			}
		}
		for t := range n {
			attn := make([]float64, 0, cfg.Heads*hd)
			for hh := range cfg.Heads {
				g := hh / nRep // repeat_kv
				scores := make([]float64, t+1)
				mx := math.Inf(-1)
				for j := 0; j <= t; j++ {
					dot := 0.0
					for i := range hd {
						dot += q[t][hh][i] * k[j][g][i]
					}
					scores[j] = dot / math.Sqrt(float64(hd))
					mx = math.Max(mx, scores[j])
				}
				z := 0.0
				for j := range scores {
					scores[j] = math.Exp(scores[j] - mx)
					z += scores[j]
				}
				out := make([]float64, hd)
				for j := range scores {
					for i := range hd {
						out[i] += scores[j] / z * v[j][g][i]
					}
				}
				attn = append(attn, out...)
			}
			o := refLinear(attn, b.O, cfg.Dim, b.OBias, pair(l, func(a *BlockAdapter[float64]) *LoraPair[float64] { return a.O }), s)
			for i := range o {
				h[t][i] += o[i]
			}
		}
		for t := range n {
			xn := refRMSNorm(h[t], b.MLPNorm, eps)
			g := refLinear(xn, b.Gate, cfg.Hidden, nil, pair(l, func(a *BlockAdapter[float64]) *LoraPair[float64] { return a.Gate }), s)
			u := refLinear(xn, b.Up, cfg.Hidden, nil, pair(l, func(a *BlockAdapter[float64]) *LoraPair[float64] { return a.Up }), s)
			for i := range g {
				g[i] = g[i] / (1 + math.Exp(-g[i])) * u[i]
			}
			dn := refLinear(g, b.Down, cfg.Dim, nil, pair(l, func(a *BlockAdapter[float64]) *LoraPair[float64] { return a.Down }), s)
			for i := range dn {
				h[t][i] += dn[i]
			}
		}
	}
	head := m.Unembed
	if cfg.TiedEmbed {
		head = m.Embed // lm_head.weight is embed_tokens.weight
	}
	var headLora *LoraPair[float64]
	if ad != nil {
		headLora = ad.Unembed
	}
	out := make([][]float64, n)
	for t := range n {
		logits := refLinear(refRMSNorm(h[t], m.FinalNorm, eps), head, cfg.Vocab, nil, headLora, s)
		mx := math.Inf(-1)
		for _, x := range logits {
			mx = math.Max(mx, x)
		}
		z := 0.0
		for _, x := range logits {
			z += math.Exp(x - mx)
		}
		for i := range logits {
			logits[i] -= mx + math.Log(z)
		}
		out[t] = logits
	}
	return out
}

// hfTestConfig is the shape of the reference tests: GQA with 2 query heads
// per KV head and a head width (10) unrelated to Dim/Heads (6).
func hfTestConfig() Config {
	return Config{Vocab: 50, Dim: 24, Layers: 2, Heads: 4, KVHeads: 2, HeadDim: 10, Hidden: 40, Context: 48}
}

// hfOptions are the architecture options, each alone and all together.
func hfOptions() map[string]func(*Config) {
	llama3 := func(c *Config) {
		// theta 100 spreads 5 wavelengths over 6.3…251 positions: one
		// unchanged (< 16/2), one smoothed, three divided by the factor.
		c.RopeTheta = 100
		c.Rope = &RopeScaling{Type: "llama3", Factor: 8, LowFreqFactor: 1, HighFreqFactor: 2, OriginalContext: 16}
	}
	yarn := func(c *Config) {
		c.RopeTheta = 100
		c.Rope = &RopeScaling{Type: "yarn", Factor: 4, OriginalContext: 16}
	}
	return map[string]func(*Config){
		"tandem":  func(c *Config) { c.KVHeads, c.HeadDim = 0, 0 },
		"gqa":     func(c *Config) {},
		"qk_norm": func(c *Config) { c.QKNorm = true },
		"qkv_bias": func(c *Config) {
			c.QKVBias = true
		},
		"o_bias":     func(c *Config) { c.OBias = true },
		"tied":       func(c *Config) { c.TiedEmbed = true },
		"rope_theta": func(c *Config) { c.RopeTheta = 1e6; c.NormEps = 1e-6 },
		"linear":     func(c *Config) { c.Rope = &RopeScaling{Type: "linear", Factor: 2.5} },
		"llama3":     llama3,
		"yarn":       yarn,
		"all": func(c *Config) {
			c.QKNorm, c.QKVBias, c.OBias, c.TiedEmbed, c.NormEps = true, true, true, true, 1e-6
			llama3(c)
		},
		"all_yarn": func(c *Config) {
			c.QKNorm, c.QKVBias, c.OBias = true, true, true
			yarn(c)
		},
	}
}

// hfModel returns a random model of cfg with peaky logits, random norms
// (q/k norms included) and biases large enough to matter.
func hfModel[T Float](t *testing.T, cfg Config, seed uint64) *Model[T] {
	t.Helper()
	m, err := NewModel[T](cfg, seed)
	require.NoError(t, err)
	rng := rand.New(rand.NewPCG(seed, 17))
	for _, nt := range m.tensors() {
		for i := range nt.Data {
			switch {
			case strings.HasSuffix(nt.Name, ".bias"):
				nt.Data[i] = T(rng.NormFloat64() * 0.3)
			case len(nt.Shape) == 1:
				nt.Data[i] = T(0.5 + rng.Float64())
			default:
				nt.Data[i] *= 5
			}
		}
	}
	return m
}

// TestForwardMatchesHFReference compares the trainer's log-probs (with and
// without prefix sharing, with a random adapter and without) to the naive
// transcription, on sequences of 40 tokens, past the llama3 and yarn
// original context of 16.
func TestForwardMatchesHFReference(t *testing.T) {
	t.Parallel()
	for name, opt := range hfOptions() {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			cfg := hfTestConfig()
			opt(&cfg)
			require.NoError(t, cfg.Validate())
			base64 := hfModel[float64](t, cfg, 3)
			ad64, err := NewAdapter[float64](cfg, DefaultLoraConfig())
			require.NoError(t, err)
			randomizeAdapter(ad64, 5, 0.1)
			// Three examples sharing a 20-token prefix (packed as one span
			// with branches) and one of its own, 40 tokens each.
			rng := rand.New(rand.NewPCG(9, 9))
			prefix := make([]int, 20)
			for i := range prefix {
				prefix[i] = rng.IntN(cfg.Vocab)
			}
			var data []Example
			for e := range 4 {
				seq := append([]int{}, prefix...)
				if e == 3 {
					seq = seq[:0]
				}
				for len(seq) < 41 {
					seq = append(seq, rng.IntN(cfg.Vocab))
				}
				data = append(data, Example{Input: seq[:40], Targets: seq[1:]})
			}
			// The same model with its matrices stored in bfloat16, and the
			// reference over exactly those weights.
			b16, err := StoreBF16(ConvertModel[float32](base64))
			require.NoError(t, err)
			ref16 := ConvertModel[float64](b16)
			// And with the activations rounded to bfloat16 in the products
			// with them (the same weights, so the same reference).
			b16r := *b16
			roundA := *b16.BF16
			roundA.RoundActivations = true
			b16r.BF16 = &roundA
			// And in IEEE half precision.
			h16, err := StoreF16(ConvertModel[float32](base64))
			require.NoError(t, err)
			refH := ConvertModel[float64](h16)
			for _, withAd := range []bool{false, true} {
				var ad *Adapter[float64]
				if withAd {
					ad = ad64
				}
				want := make([][]float64, len(data))
				want16 := make([][]float64, len(data))
				wantH := make([][]float64, len(data))
				for i, ex := range data {
					rows := refLogSoftmax(base64, ad, ex.Input)
					rows16 := refLogSoftmax(ref16, ad, ex.Input)
					rowsH := refLogSoftmax(refH, ad, ex.Input)
					for j, tg := range ex.Targets {
						want[i] = append(want[i], rows[j][tg])
						want16[i] = append(want16[i], rows16[j][tg])
						wantH[i] = append(wantH[i], rowsH[j][tg])
					}
				}
				for _, shared := range []bool{false, true} {
					gap64 := engineGap(t, base64, ad, data, want, !shared)
					var ad32 *Adapter[float32]
					if ad != nil {
						ad32 = convertAdapter[float32](ad)
					}
					gap32 := engineGap(t, ConvertModel[float32](base64), ad32, data, want, !shared)
					gap16 := engineGap(t, b16, ad32, data, want16, !shared)
					gapH := engineGap(t, h16, ad32, data, wantH, !shared)
					gapR := engineGap(t, &b16r, ad32, data, want16, !shared)
					assert.LessOrEqual(t, gap64, 1e-9, "float64, adapter %v, shared %v", withAd, shared)
					assert.LessOrEqual(t, gap32, 1e-4, "float32, adapter %v, shared %v", withAd, shared)
					assert.LessOrEqual(t, gap16, 2e-3, "bfloat16 weights (%s), adapter %v, shared %v", kernels.BF16Implementation(), withAd, shared)
					assert.LessOrEqual(t, gapH, 1e-4, "float16 weights, adapter %v, shared %v", withAd, shared)
					// Each activation entering a product carries a relative
					// error up to 2⁻⁹ (2e-3) there, as in mixed-precision
					// training; over this model's layers the log-probs move
					// by up to about 6e-3.
					assert.LessOrEqual(t, gapR, 1e-2, "bfloat16 weights and activations, adapter %v, shared %v", withAd, shared)
					if kernels.BF16RoundsA() {
						assert.Greater(t, gapR, 10*gap16, "bfloat16 activations: the products must round them (adapter %v, shared %v)", withAd, shared)
					} else {
						assert.Equal(t, gap16, gapR, "no VDPBF16PS here: the activations stay float32 (adapter %v, shared %v)", withAd, shared)
					}
					t.Logf("adapter %-5v shared %-5v max |engine − reference| float64 %.2e float32 %.2e bfloat16 weights %.2e float16 weights %.2e bfloat16 weights and activations %.2e", withAd, shared, gap64, gap32, gap16, gapH, gapR)
				}
			}
		})
	}
}

// engineGap runs data through a trainer over base (with ad, when not nil)
// and returns the largest |log-prob − want|.
func engineGap[T Float](t *testing.T, base *Model[T], ad *Adapter[T], data []Example, want [][]float64, noShare bool) float64 {
	t.Helper()
	lora := DefaultLoraConfig()
	tr, err := NewTrainer(base, lora, TrainerOptions{Threads: 2, NoPrefixSharing: noShare})
	require.NoError(t, err)
	out := Output{}
	if ad == nil {
		out.Logprobs, err = tr.BaseLogprobs(context.Background(), data)
	} else {
		tr.ad = ad
		tr.buildParams()
		out, err = tr.Forward(context.Background(), data, LossSpec{Name: CrossEntropy})
	}
	require.NoError(t, err)
	gap := 0.0
	for i := range want {
		for j := range want[i] {
			gap = math.Max(gap, math.Abs(out.Logprobs[i][j]-want[i][j]))
		}
	}
	return gap
}

func convertAdapter[U, T Float](a *Adapter[T]) *Adapter[U] {
	c := newZeroAdapter[U](a.Model, a.Lora)
	src, dst := a.tensors(), c.tensors()
	for i := range src {
		for j, x := range src[i].Data {
			dst[i].Data[j] = U(x)
		}
	}
	return c
}

// TestRopeTablesFloat32 pins what the float32 rounding buys: the engine's
// tables equal the reference's bit for bit, and a float64 computation of the
// angles differs from them by about pos·6e-8 at large positions.
func TestRopeTablesFloat32(t *testing.T) {
	t.Parallel()
	cfg := Config{Vocab: 2, Dim: 128, Layers: 1, Heads: 1, Hidden: 1, Context: 4096, RopeTheta: 500000,
		Rope: &RopeScaling{Type: "llama3", Factor: 32, LowFreqFactor: 1, HighFreqFactor: 4, OriginalContext: 8192}}
	require.NoError(t, cfg.Validate())
	r := newRope[float64](cfg)
	cos, sin := refRope(cfg, cfg.Context)
	worst64 := 0.0
	for p := range cfg.Context {
		for j := range r.half {
			require.Equal(t, cos[p][j], r.cos[p*r.half+j], "cos pos %d freq %d", p, j)
			require.Equal(t, sin[p][j], r.sin[p*r.half+j], "sin pos %d freq %d", p, j)
		}
		angle := float64(p) * math.Pow(cfg.RopeTheta, -2/float64(128)) // freq 1, unscaled (high frequency)
		worst64 = math.Max(worst64, math.Abs(math.Cos(angle)-r.cos[p*r.half+1]))
	}
	t.Logf("float64 angles vs float32 tables at freq 1: max |Δcos| %.2e over 4096 positions", worst64)
	assert.Greater(t, worst64, 1e-5, "the float32 rounding is visible at long positions")
}
