#!/usr/bin/env python3
"""PyTorch reference for `go run ./bench/engine`: the embedded engine's
architecture (pre-norm decoder, RMSNorm, rotary positions, SwiGLU MLP,
grouped-query attention with its own head width, optional per-head q/k
RMSNorm and tied embeddings as in Qwen3; LoRA on q/k/v/o, gate/up/down and
the unembedding, base frozen) at the same shapes, timed the same way.

Prints one JSON object: torch_train_tokens_per_s, torch_sample_tokens_per_s,
and the BLAS library the process loaded (torch_blas) with OpenBLAS's core
name (torch_blas_core, "" when it is not OpenBLAS). Arguments come from the
Go benchmark so both sides measure the same work.
"""
import argparse
import ctypes
import json
import math
import time

import torch
import torch.nn as nn
import torch.nn.functional as F


class LoRALinear(nn.Module):
    def __init__(self, din, dout, rank, alpha):
        super().__init__()
        self.weight = nn.Parameter(torch.randn(dout, din) * 0.02, requires_grad=False)
        self.A = nn.Parameter(torch.empty(rank, din).uniform_(-1 / math.sqrt(din), 1 / math.sqrt(din)))
        self.B = nn.Parameter(torch.zeros(dout, rank))
        self.scale = alpha / rank

    def forward(self, x):
        return F.linear(x, self.weight) + self.scale * F.linear(F.linear(x, self.A), self.B)


class RMSNorm(nn.Module):
    def __init__(self, d, eps=1e-5):
        super().__init__()
        self.w = nn.Parameter(torch.ones(d), requires_grad=False)
        self.eps = eps

    def forward(self, x):
        return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.eps) * self.w


def rope_tables(ctx, hd, theta=10000.0):
    inv = 1.0 / (theta ** (torch.arange(0, hd, 2).float() / hd))
    ang = torch.outer(torch.arange(ctx).float(), inv)
    ang = torch.cat((ang, ang), dim=-1)
    return ang.cos(), ang.sin()


def apply_rope(x, cos, sin):
    # x: (B, H, T, hd); Llama's "rotate half" layout, as the engine
    x1, x2 = x[..., : x.shape[-1] // 2], x[..., x.shape[-1] // 2:]
    return x * cos + torch.cat((-x2, x1), dim=-1) * sin


class Block(nn.Module):
    def __init__(self, d, h, kvh, hd, hidden, rank, alpha, qk_norm, eps):
        super().__init__()
        self.h, self.kvh, self.hd = h, kvh, hd
        self.n1 = RMSNorm(d, eps)
        self.q = LoRALinear(d, h * hd, rank, alpha)
        self.k = LoRALinear(d, kvh * hd, rank, alpha)
        self.v = LoRALinear(d, kvh * hd, rank, alpha)
        self.o = LoRALinear(h * hd, d, rank, alpha)
        self.qn = RMSNorm(hd, eps) if qk_norm else None
        self.kn = RMSNorm(hd, eps) if qk_norm else None
        self.n2 = RMSNorm(d, eps)
        self.gate = LoRALinear(d, hidden, rank, alpha)
        self.up = LoRALinear(d, hidden, rank, alpha)
        self.down = LoRALinear(hidden, d, rank, alpha)

    def forward(self, x, cos, sin, pos0=0, cache=None):
        B, T, D = x.shape
        hd = self.hd
        y = self.n1(x)
        q = self.q(y).view(B, T, self.h, hd)
        k = self.k(y).view(B, T, self.kvh, hd)
        if self.qn is not None:
            q, k = self.qn(q), self.kn(k)
        q, k = q.transpose(1, 2), k.transpose(1, 2)
        v = self.v(y).view(B, T, self.kvh, hd).transpose(1, 2)
        c, s = cos[pos0:pos0 + T], sin[pos0:pos0 + T]
        q, k = apply_rope(q, c, s), apply_rope(k, c, s)
        if cache is not None:
            if cache[0] is not None:
                k = torch.cat([cache[0], k], dim=2)
                v = torch.cat([cache[1], v], dim=2)
            cache[0], cache[1] = k, v
        if self.kvh != self.h:
            k = k.repeat_interleave(self.h // self.kvh, dim=1)
            v = v.repeat_interleave(self.h // self.kvh, dim=1)
        att = (q @ k.transpose(-1, -2)) / math.sqrt(hd)
        if T > 1:
            S = k.shape[2]
            mask = torch.ones(T, S, dtype=torch.bool).tril(S - T)
            att = att.masked_fill(~mask, float("-inf"))
        att = att.softmax(-1)
        a = (att @ v).transpose(1, 2).reshape(B, T, self.h * hd)
        x = x + self.o(a)
        y = self.n2(x)
        return x + self.down(F.silu(self.gate(y)) * self.up(y))


class Model(nn.Module):
    def __init__(self, a):
        super().__init__()
        d, h = a.dim, a.heads
        kvh = a.kv_heads or h
        hd = a.head_dim or d // h
        self.embed = nn.Parameter(torch.randn(a.vocab, d) * 0.02, requires_grad=False)
        self.blocks = nn.ModuleList(Block(d, h, kvh, hd, a.hidden, a.rank, a.alpha, a.qk_norm, a.norm_eps) for _ in range(a.layers))
        self.norm = RMSNorm(d, a.norm_eps)
        self.unembed = LoRALinear(d, a.vocab, a.rank, a.alpha)
        if a.tied:
            self.unembed.weight = self.embed  # one frozen matrix, as the engine
        self.cos, self.sin = rope_tables(a.context, hd, a.rope_theta)

    def forward(self, toks, pos0=0, caches=None):
        x = self.embed[toks]
        for i, b in enumerate(self.blocks):
            x = b(x, self.cos, self.sin, pos0, None if caches is None else caches[i])
        return self.unembed(self.norm(x))


def bench_train(m, a, steps):
    params = [p for p in m.parameters() if p.requires_grad]
    opt = torch.optim.AdamW(params, lr=1e-4, betas=(0.9, 0.95), eps=1e-12, weight_decay=0.0)
    g = torch.Generator().manual_seed(1)
    toks = torch.randint(0, a.vocab, (a.train_batch, a.train_seq + 1), generator=g)
    inp, tgt = toks[:, :-1], toks[:, 1:]

    micro = a.train_micro or a.train_batch

    def step():
        # Gradients accumulate over micro-batches of `micro` sequences, as
        # the engine's trainer bounds its activations, then one AdamW step.
        opt.zero_grad(set_to_none=True)
        for lo in range(0, a.train_batch, micro):
            logits = m(inp[lo:lo + micro])
            logp = logits.log_softmax(-1).gather(-1, tgt[lo:lo + micro].unsqueeze(-1)).squeeze(-1)
            loss = -logp.sum()
            loss.backward()
        opt.step()

    step()  # warm-up
    t0 = time.perf_counter()
    for _ in range(steps):
        step()
    dt = time.perf_counter() - t0
    return steps * a.train_batch * a.train_seq / dt


@torch.no_grad()
def merge_lora(m):
    """Fold every adapter into its base weight, as a sampler serving one
    adapter version does (the Go engine's sampler does the same)."""
    for b in m.modules():
        if isinstance(b, LoRALinear):
            b.weight += b.scale * (b.B @ b.A)
            b.B.zero_()
            b.forward = lambda x, b=b: F.linear(x, b.weight)


@torch.no_grad()
def bench_sample(m, a, reps, n):
    merge_lora(m)
    g = torch.Generator().manual_seed(2)
    prompt = torch.randint(0, a.vocab, (1, a.prompt_len), generator=g)

    def once():
        caches = [[None, None] for _ in m.blocks]
        # prefill once, then share the prompt's cache across the n samples
        logits = m(prompt, 0, caches)
        for c in caches:
            c[0] = c[0].expand(n, -1, -1, -1).contiguous()
            c[1] = c[1].expand(n, -1, -1, -1).contiguous()
        last = logits[:, -1].expand(n, -1)
        pos = a.prompt_len
        for _ in range(a.new_tokens):
            logp = (last / 1.0).log_softmax(-1)
            tok = torch.multinomial(logp.exp(), 1, generator=g)
            _ = logp.gather(-1, tok)
            last = m(tok, pos, caches)[:, -1]
            pos += 1

    once()
    t0 = time.perf_counter()
    for _ in range(reps):
        once()
    dt = time.perf_counter() - t0
    return reps * n * a.new_tokens / dt


def loaded_blas():
    """The BLAS library this process loaded, and OpenBLAS's core name."""
    path = ""
    with open("/proc/self/maps") as f:
        for line in f:
            fields = line.split()
            if len(fields) >= 6 and fields[-1].rsplit("/", 1)[-1].startswith(("libblas.so", "libopenblas")):
                path = fields[-1]
                break
    core = ""
    if path:
        try:
            fn = ctypes.CDLL(path).openblas_get_corename
            fn.restype = ctypes.c_char_p
            core = fn().decode()
        except (AttributeError, OSError):
            core = ""
    return path, core


def main():
    p = argparse.ArgumentParser()
    for name, d in [("vocab", 98), ("dim", 128), ("layers", 4), ("heads", 4), ("hidden", 512),
                    ("context", 128), ("rank", 8), ("threads", 1), ("train_batch", 32),
                    ("train_seq", 64), ("train_steps", 5), ("prompt_len", 16), ("n", 8),
                    ("new_tokens", 48), ("sample_reps", 5), ("kv_heads", 0), ("head_dim", 0),
                    ("qk_norm", 0), ("tied", 0), ("latency", 0), ("train_micro", 0)]:
        p.add_argument("--" + name, type=int, default=d)
    p.add_argument("--alpha", type=float, default=32.0)
    p.add_argument("--rope_theta", type=float, default=10000.0)
    p.add_argument("--norm_eps", type=float, default=1e-5)
    a = p.parse_args()
    torch.manual_seed(0)
    torch.set_num_threads(a.threads)
    m = Model(a)
    for b in m.modules():
        if isinstance(b, LoRALinear):
            nn.init.normal_(b.B, std=0.01)  # as after some training: the B path is live
    out = {
        "torch_version": torch.__version__,
        "torch_threads": torch.get_num_threads(),
        "torch_train_tokens_per_s": bench_train(m, a, a.train_steps),
        "torch_sample_tokens_per_s": bench_sample(m, a, a.sample_reps, a.n),
    }
    if a.latency:
        out["torch_sample1_tokens_per_s"] = bench_sample(m, a, a.sample_reps, 1)
    out["torch_blas"], out["torch_blas_core"] = loaded_blas()
    print(json.dumps(out))


if __name__ == "__main__":
    main()
