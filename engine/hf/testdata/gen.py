#!/usr/bin/python3
"""Golden checkpoints and log-probs for package engine/hf.

Run from the repository root:  /usr/bin/python3 engine/hf/testdata/gen.py

Needs torch (1.13 works) and numpy; no transformers, no safetensors package.
For every case below it writes engine/hf/testdata/<case>/ holding a tiny
random-weight checkpoint in Hugging Face layout (config.json,
generation_config.json, model.safetensors or shards plus
model.safetensors.index.json) and golden.json: fixed token sequences and the
log-probability of each next token under a float64 reimplementation of the
Hugging Face causal-LM forward pass (Llama, Qwen2, Qwen3, Mistral), written
from the modeling code's math:

  h = embed[tokens]
  per layer:  x = rmsnorm(h) * w_in
              q, k, v = x Wq^T (+bq), x Wk^T (+bk), x Wv^T (+bv)
              split into heads of head_dim; Qwen3: rmsnorm q and k per head
              rotate-half RoPE on q and k (cos/sin tables built in float32)
              grouped-query causal attention, scale head_dim^-0.5
              h += (attn) Wo^T (+bo)
              x = rmsnorm(h) * w_post;  h += (silu(x Wg^T) * (x Wu^T)) Wd^T
  logits = rmsnorm(h) * w_norm  @  (lm_head or embed)^T;  log_softmax over all
  columns.

The RoPE tables follow modeling_rope_utils: inv_freq for default, linear,
llama3 and yarn computed with float32 torch ops, angles = inv_freq x position
in float32, cos/sin in float32 times the attention factor, then widened to
float64. Everything else is float64. For BF16/F16 cases the reference uses
the rounded weights, widened to float64.

Deterministic: fixed seeds, sorted JSON keys, repr floats; regenerating
gives the same bytes.

  gen.py --qwen3-0.6b DIR  writes one more case, not committed: random BF16
  weights in Qwen3-0.6B's real shapes (1.5 GB, with the duplicate lm_head
  the real file holds) and a golden sequence of 40 tokens, for checking
  tandem serve -model at full size (about 10 GB of memory, a few minutes).
"""

import json
import math
import os
import struct

import torch

HERE = os.path.dirname(os.path.abspath(__file__))

# ---------------------------------------------------------------- safetensors


def st_bytes(t, dtype):
    """Raw little-endian bytes of a float64 tensor stored as dtype."""
    t = t.detach().contiguous()
    if dtype == "F32":
        return t.to(torch.float32).numpy().astype("<f4").tobytes()
    if dtype == "F16":
        return t.to(torch.float16).numpy().astype("<f2").tobytes()
    if dtype == "BF16":
        return t.to(torch.bfloat16).view(torch.int16).numpy().astype("<i2").tobytes()
    if dtype == "F64":
        return t.numpy().astype("<f8").tobytes()
    raise ValueError(dtype)


def rounded(t, dtype):
    """t rounded to dtype and widened back to float64 (what a loader sees)."""
    if dtype == "F32":
        return t.to(torch.float32).to(torch.float64)
    if dtype == "F16":
        return t.to(torch.float16).to(torch.float64)
    if dtype == "BF16":
        return t.to(torch.bfloat16).to(torch.float64)
    return t


def write_safetensors(path, tensors, dtype, metadata=None):
    """tensors: list of (name, float64 tensor); data in the given order."""
    header = {}
    if metadata:
        header["__metadata__"] = metadata
    blobs = []
    off = 0
    for name, t in tensors:
        b = st_bytes(t, dtype)
        header[name] = {"dtype": dtype, "shape": list(t.shape), "data_offsets": [off, off + len(b)]}
        blobs.append(b)
        off += len(b)
    hj = json.dumps(header, sort_keys=True, separators=(",", ":")).encode()
    hj += b" " * ((8 - (8 + len(hj)) % 8) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(hj)))
        f.write(hj)
        for b in blobs:
            f.write(b)
    return off


def write_json(path, obj):
    with open(path, "w") as f:
        json.dump(obj, f, indent=2, sort_keys=True)
        f.write("\n")


# ---------------------------------------------------------------- the model


def rope_params(c):
    """(rope_theta, scaling dict or None) in either config spelling."""
    if "rope_parameters" in c:
        rp = dict(c["rope_parameters"])
        theta = rp.pop("rope_theta")
        kind = rp.get("rope_type", "default")
        return theta, (None if kind == "default" else rp)
    rs = c.get("rope_scaling")
    if rs is not None and rs.get("rope_type", rs.get("type")) == "default":
        rs = None
    return c.get("rope_theta", 10000.0), rs


def head_dim(c):
    return c.get("head_dim") or c["hidden_size"] // c["num_attention_heads"]


def rope_tables(c, n):
    """cos, sin [n, head_dim] (float64 views of float32 tables)."""
    base, rs = rope_params(c)
    dim = head_dim(c)
    expo = torch.arange(0, dim, 2, dtype=torch.int64).float() / dim
    inv = 1.0 / (base ** expo)  # float32
    scale = 1.0
    kind = None if rs is None else rs.get("rope_type", rs.get("type"))
    if kind == "linear":
        inv = inv / rs["factor"]
    elif kind == "llama3":
        factor = rs["factor"]
        low, high = rs["low_freq_factor"], rs["high_freq_factor"]
        old = rs["original_max_position_embeddings"]
        low_wl, high_wl = old / low, old / high
        wavelen = 2 * math.pi / inv
        scaled = torch.where(wavelen > low_wl, inv / factor, inv)
        smooth = (old / wavelen - low) / (high - low)
        smoothed = (1 - smooth) * scaled / factor + smooth * scaled
        medium = ~(wavelen < high_wl) * ~(wavelen > low_wl)
        inv = torch.where(medium, smoothed, scaled)
    elif kind == "yarn":
        factor = rs["factor"]
        length = rs.get("original_max_position_embeddings") or c["max_position_embeddings"]
        scale = rs.get("attention_factor")
        if scale is None:
            scale = 0.1 * math.log(factor) + 1.0
        fast = rs.get("beta_fast") or 32
        slow = rs.get("beta_slow") or 1

        def corr(rot):
            return dim * math.log(length / (rot * 2 * math.pi)) / (2 * math.log(base))

        lo = max(math.floor(corr(fast)), 0)
        hi = min(math.ceil(corr(slow)), dim - 1)
        if lo == hi:
            hi += 0.001
        ramp = torch.clamp((torch.arange(dim // 2, dtype=torch.float32) - lo) / (hi - lo), 0, 1)
        pos_freqs = base ** expo
        extra = 1.0 / pos_freqs
        inter = 1.0 / (factor * pos_freqs)
        keep = 1 - ramp
        inv = inter * (1 - keep) + extra * keep
    elif kind is not None:
        raise ValueError(kind)
    pos = torch.arange(n, dtype=torch.float32)
    freqs = inv[:, None] @ pos[None, :]  # float32, [dim/2, n]
    emb = torch.cat((freqs.T, freqs.T), dim=-1)
    cos = (emb.cos() * scale).to(torch.float64)
    sin = (emb.sin() * scale).to(torch.float64)
    return cos, sin


def rmsnorm(x, w, eps):
    return w * (x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + eps))


def rotate_half(x):
    h = x.shape[-1] // 2
    return torch.cat((-x[..., h:], x[..., :h]), dim=-1)


def forward(c, W, tokens):
    """Log-probs [n, vocab] of a float64 forward over one sequence."""
    n = len(tokens)
    d, H = c["hidden_size"], c["num_attention_heads"]
    KV = c.get("num_key_value_heads") or H
    hd = head_dim(c)
    eps = c["rms_norm_eps"]
    cos, sin = rope_tables(c, n)
    mask = torch.full((n, n), float("-inf"), dtype=torch.float64).triu(1)
    h = W["model.embed_tokens.weight"][torch.tensor(tokens)]
    for i in range(c["num_hidden_layers"]):
        p = "model.layers.%d." % i

        def lin(x, name):
            y = x @ W[p + name + ".weight"].T
            if p + name + ".bias" in W:
                y = y + W[p + name + ".bias"]
            return y

        x = rmsnorm(h, W[p + "input_layernorm.weight"], eps)
        q = lin(x, "self_attn.q_proj").view(n, H, hd)
        k = lin(x, "self_attn.k_proj").view(n, KV, hd)
        v = lin(x, "self_attn.v_proj").view(n, KV, hd)
        if p + "self_attn.q_norm.weight" in W:
            q = rmsnorm(q, W[p + "self_attn.q_norm.weight"], eps)
            k = rmsnorm(k, W[p + "self_attn.k_norm.weight"], eps)
        q, k, v = q.transpose(0, 1), k.transpose(0, 1), v.transpose(0, 1)  # heads first
        q = q * cos + rotate_half(q) * sin
        k = k * cos + rotate_half(k) * sin
        rep = H // KV
        k = k.repeat_interleave(rep, dim=0)  # query head j uses KV head j // rep
        v = v.repeat_interleave(rep, dim=0)
        s = (q @ k.transpose(1, 2)) * hd ** -0.5 + mask
        a = torch.softmax(s, dim=-1) @ v  # [H, n, hd]
        a = a.transpose(0, 1).reshape(n, H * hd)
        h = h + lin(a, "self_attn.o_proj")
        x = rmsnorm(h, W[p + "post_attention_layernorm.weight"], eps)
        g = lin(x, "mlp.gate_proj")
        u = lin(x, "mlp.up_proj")
        h = h + lin(torch.nn.functional.silu(g) * u, "mlp.down_proj")
    h = rmsnorm(h, W["model.norm.weight"], eps)
    head = W.get("lm_head.weight")
    if head is None or c.get("tie_word_embeddings"):
        head = W["model.embed_tokens.weight"]
    return torch.log_softmax(h @ head.T, dim=-1)


# ---------------------------------------------------------------- weights


def make_weights(c, gen, qkv_bias, o_bias, qk_norm):
    """Random weights in Hugging Face names and order, float64."""
    d, I, V = c["hidden_size"], c["intermediate_size"], c["vocab_size"]
    H = c["num_attention_heads"]
    KV = c.get("num_key_value_heads") or H
    hd = head_dim(c)

    def mat(o, i):
        return torch.randn(o, i, generator=gen, dtype=torch.float64) * (1.5 / math.sqrt(i))

    def norm(k):
        return 1 + 0.2 * torch.randn(k, generator=gen, dtype=torch.float64)

    def bias(k):
        return 0.3 * torch.randn(k, generator=gen, dtype=torch.float64)

    W = [("model.embed_tokens.weight", torch.randn(V, d, generator=gen, dtype=torch.float64))]
    for i in range(c["num_hidden_layers"]):
        p = "model.layers.%d." % i
        W.append((p + "input_layernorm.weight", norm(d)))
        W.append((p + "self_attn.q_proj.weight", mat(H * hd, d)))
        W.append((p + "self_attn.k_proj.weight", mat(KV * hd, d)))
        W.append((p + "self_attn.v_proj.weight", mat(KV * hd, d)))
        W.append((p + "self_attn.o_proj.weight", mat(d, H * hd)))
        if qkv_bias:
            W.append((p + "self_attn.q_proj.bias", bias(H * hd)))
            W.append((p + "self_attn.k_proj.bias", bias(KV * hd)))
            W.append((p + "self_attn.v_proj.bias", bias(KV * hd)))
        if o_bias:
            W.append((p + "self_attn.o_proj.bias", bias(d)))
        if qk_norm:
            W.append((p + "self_attn.q_norm.weight", norm(hd)))
            W.append((p + "self_attn.k_norm.weight", norm(hd)))
        W.append((p + "post_attention_layernorm.weight", norm(d)))
        W.append((p + "mlp.gate_proj.weight", mat(I, d)))
        W.append((p + "mlp.up_proj.weight", mat(I, d)))
        W.append((p + "mlp.down_proj.weight", mat(d, I)))
    W.append(("model.norm.weight", norm(d)))
    if not c.get("tie_word_embeddings"):
        W.append(("lm_head.weight", torch.randn(V, d, generator=gen, dtype=torch.float64) / math.sqrt(d)))
    return W


# ---------------------------------------------------------------- cases


def base_config(model_type, arch, **kw):
    c = {
        "architectures": [arch],
        "model_type": model_type,
        "hidden_act": "silu",
        "attention_dropout": 0.0,
        "initializer_range": 0.02,
        "use_cache": True,
        "transformers_version": "4.51.0",
        "bos_token_id": 1,
        "eos_token_id": 2,
        "num_hidden_layers": 2,
    }
    c.update(kw)
    return c


CASES = [
    # tandem's own shape: KV heads = heads, head_dim = hidden/heads, untied, no scaling
    dict(name="llama-plain", dtype="F32", seed=1, config=base_config(
        "llama", "LlamaForCausalLM", vocab_size=64, hidden_size=32, intermediate_size=64,
        num_attention_heads=4, num_key_value_heads=4, max_position_embeddings=128,
        rms_norm_eps=1e-5, rope_theta=10000.0, rope_scaling=None, tie_word_embeddings=False,
        attention_bias=False, mlp_bias=False, pretraining_tp=1, torch_dtype="float32")),
    # GQA 4/2, llama3 scaling active from position 16 on, untied, old rotary_emb.inv_freq buffers
    dict(name="llama", dtype="F32", seed=2, inv_freq=True, config=base_config(
        "llama", "LlamaForCausalLM", vocab_size=96, hidden_size=32, intermediate_size=80,
        num_attention_heads=4, num_key_value_heads=2, head_dim=8, max_position_embeddings=128,
        rms_norm_eps=1e-5, rope_theta=500000.0, tie_word_embeddings=False,
        rope_scaling={"factor": 4.0, "low_freq_factor": 1.0, "high_freq_factor": 4.0,
                      "original_max_position_embeddings": 16, "rope_type": "llama3"},
        attention_bias=False, mlp_bias=False, pretraining_tp=1, torch_dtype="float32",
        eos_token_id=[2, 3])),
    # attention_bias on all four projections, tied, linear scaling
    dict(name="llama-tied-bias", dtype="F32", seed=3, config=base_config(
        "llama", "LlamaForCausalLM", vocab_size=80, hidden_size=24, intermediate_size=48,
        num_attention_heads=3, num_key_value_heads=1, max_position_embeddings=64,
        rms_norm_eps=1e-5, rope_theta=10000.0, tie_word_embeddings=True,
        rope_scaling={"type": "linear", "factor": 2.0},
        attention_bias=True, mlp_bias=False, torch_dtype="float32")),
    # q/k/v bias (always in Qwen2), tied, window present but off
    dict(name="qwen2", dtype="F32", seed=4, config=base_config(
        "qwen2", "Qwen2ForCausalLM", vocab_size=128, hidden_size=32, intermediate_size=64,
        num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=256,
        rms_norm_eps=1e-6, rope_theta=1000000.0, tie_word_embeddings=True,
        sliding_window=32, use_sliding_window=False, max_window_layers=2, use_mrope=False,
        torch_dtype="bfloat16")),
    # q/k norm, head_dim 16 != 32/4, tied, and a duplicate lm_head.weight as Qwen3-0.6B ships
    dict(name="qwen3", dtype="F32", seed=5, duplicate_head=True, config=base_config(
        "qwen3", "Qwen3ForCausalLM", vocab_size=100, hidden_size=32, intermediate_size=64,
        num_attention_heads=4, num_key_value_heads=2, head_dim=16, max_position_embeddings=256,
        rms_norm_eps=1e-6, rope_theta=1000000.0, rope_scaling=None, tie_word_embeddings=True,
        attention_bias=False, sliding_window=None, use_sliding_window=False, max_window_layers=2,
        torch_dtype="bfloat16")),
    # the same architecture stored in BF16 and split into two shards with an index
    dict(name="qwen3-bf16-sharded", dtype="BF16", seed=6, shards=2, config=base_config(
        "qwen3", "Qwen3ForCausalLM", vocab_size=300, hidden_size=48, intermediate_size=96,
        num_attention_heads=4, num_key_value_heads=1, head_dim=16, max_position_embeddings=512,
        rms_norm_eps=1e-6, rope_theta=1000000.0, rope_scaling=None, tie_word_embeddings=True,
        attention_bias=False, sliding_window=None, use_sliding_window=False, max_window_layers=2,
        torch_dtype="bfloat16", eos_token_id=3)),
    # transformers v5 spelling: rope_parameters, dtype, layer_types
    dict(name="qwen3-v5", dtype="F32", seed=7, config=base_config(
        "qwen3", "Qwen3ForCausalLM", vocab_size=90, hidden_size=32, intermediate_size=64,
        num_attention_heads=4, num_key_value_heads=2, head_dim=8, max_position_embeddings=256,
        rms_norm_eps=1e-6, rope_parameters={"rope_theta": 1000000.0, "rope_type": "default"},
        tie_word_embeddings=False, attention_bias=False, sliding_window=None,
        use_sliding_window=False, max_window_layers=2,
        layer_types=["full_attention", "full_attention"], dtype="float32",
        transformers_version="5.0.0")),
    # yarn scaling (factor 4, defaults for attention_factor and betas)
    dict(name="llama-yarn", dtype="F32", seed=8, config=base_config(
        "llama", "LlamaForCausalLM", vocab_size=72, hidden_size=32, intermediate_size=64,
        num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=64,
        rms_norm_eps=1e-5, rope_theta=10000.0, tie_word_embeddings=False,
        rope_scaling={"rope_type": "yarn", "factor": 4.0},
        attention_bias=False, mlp_bias=False, torch_dtype="float32")),
    # Mistral in F16 with a sliding window no shorter than the context
    dict(name="mistral-f16", dtype="F16", seed=9, config=base_config(
        "mistral", "MistralForCausalLM", vocab_size=64, hidden_size=32, intermediate_size=64,
        num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=128,
        rms_norm_eps=1e-5, rope_theta=10000.0, sliding_window=128, tie_word_embeddings=False,
        torch_dtype="float16")),
]

SEQ_LEN = 48
N_SEQS = 2


def qwen2_bias_flags(c):
    mt = c["model_type"]
    if mt == "qwen2":
        return True, False, False
    if mt == "qwen3":
        b = c.get("attention_bias", False)
        return b, b, True
    if mt == "mistral":
        return False, False, False
    b = c.get("attention_bias", False)
    return b, b, False


def gen_case(case, out=None, n_seqs=N_SEQS, seq_len=SEQ_LEN):
    c = case["config"]
    dt = case["dtype"]
    out = out or os.path.join(HERE, case["name"])
    os.makedirs(out, exist_ok=True)
    for f in os.listdir(out):
        os.remove(os.path.join(out, f))
    gen = torch.Generator().manual_seed(1000 + case["seed"])
    qkv_bias, o_bias, qk_norm = qwen2_bias_flags(c)
    W = make_weights(c, gen, qkv_bias, o_bias, qk_norm)
    W = [(n, rounded(t, dt)) for n, t in W]
    ref = dict(W)
    stored = list(W)
    if case.get("duplicate_head"):
        stored.append(("lm_head.weight", ref["model.embed_tokens.weight"].clone()))
    if case.get("inv_freq"):
        hd = head_dim(c)
        inv = 1.0 / (c["rope_theta"] ** (torch.arange(0, hd, 2, dtype=torch.float64) / hd))
        for i in range(c["num_hidden_layers"]):
            stored.append(("model.layers.%d.self_attn.rotary_emb.inv_freq" % i, inv))
    shards = case.get("shards", 1)
    if shards == 1:
        write_safetensors(os.path.join(out, "model.safetensors"), stored, dt, {"format": "pt"})
    else:
        per = (len(stored) + shards - 1) // shards
        weight_map, total = {}, 0
        for s in range(shards):
            fname = "model-%05d-of-%05d.safetensors" % (s + 1, shards)
            part = stored[s * per:(s + 1) * per]
            total += write_safetensors(os.path.join(out, fname), part, dt, {"format": "pt"})
            for n, _ in part:
                weight_map[n] = fname
        write_json(os.path.join(out, "model.safetensors.index.json"),
                   {"metadata": {"total_size": total}, "weight_map": weight_map})
    write_json(os.path.join(out, "config.json"), c)
    eos = c["eos_token_id"]
    write_json(os.path.join(out, "generation_config.json"), {
        "_from_model_config": True, "bos_token_id": c["bos_token_id"],
        "eos_token_id": eos if isinstance(eos, list) else [eos, 4],
        "transformers_version": c["transformers_version"]})

    tg = torch.Generator().manual_seed(2000 + case["seed"])
    seqs = []
    for _ in range(n_seqs):
        toks = torch.randint(0, c["vocab_size"], (seq_len,), generator=tg).tolist()
        lp = forward(c, ref, toks)
        seqs.append({"tokens": toks, "logprobs": [lp[j, toks[j + 1]].item() for j in range(seq_len - 1)]})
    write_json(os.path.join(out, "golden.json"), {
        "case": case["name"], "dtype": dt, "sequences": seqs,
        "note": "logprobs[j] = log p(tokens[j+1] | tokens[:j+1]), float64 reference, see ../gen.py"})


# Qwen3-0.6B's real shapes (its config.json), random BF16 weights with the
# duplicate lm_head the real file carries: not committed (1.5 GB); written
# by  gen.py --qwen3-0.6b DIR  for the full-size check of tandem serve -model.
QWEN3_06B = dict(name="qwen3-0.6b", dtype="BF16", seed=20, duplicate_head=True, config=base_config(
    "qwen3", "Qwen3ForCausalLM", vocab_size=151936, hidden_size=1024, intermediate_size=3072,
    num_hidden_layers=28, num_attention_heads=16, num_key_value_heads=8, head_dim=128,
    max_position_embeddings=40960, max_window_layers=28, rms_norm_eps=1e-6, rope_theta=1000000.0,
    rope_scaling=None, sliding_window=None, use_sliding_window=False, tie_word_embeddings=True,
    attention_bias=False, torch_dtype="bfloat16", bos_token_id=151643, eos_token_id=151645))


def main():
    import sys
    torch.set_num_threads(1)
    if len(sys.argv) == 3 and sys.argv[1] == "--qwen3-0.6b":
        torch.set_num_threads(os.cpu_count() or 1)
        gen_case(QWEN3_06B, out=sys.argv[2], n_seqs=1, seq_len=40)
        print("wrote", sys.argv[2])
        return
    for case in CASES:
        gen_case(case)
        print("wrote", case["name"])


if __name__ == "__main__":
    main()
