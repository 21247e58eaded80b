// Package engine is tandem's embedded language model: a small decoder-only
// transformer written in pure Go, trained with LoRA adapters on a frozen base
// (or with full-parameter gradients for pretraining) and sampled with a KV
// cache, all on the CPU.
//
// # Model
//
// Token embedding → Layers × pre-norm blocks → final RMSNorm → unembedding,
// the Hugging Face Llama 3 / Qwen2 / Qwen3 architecture. A block is
//
//	h = x + O·Attn(RoPE(nq(Q·n1(x) + bq)), RoPE(nk(K·n1(x) + bk)), V·n1(x) + bv) + bo
//	y = h + Down·(SiLU(Gate·n2(h)) ⊙ Up·n2(h))
//
// with RMSNorm n1, n2, causal grouped-query attention (Heads query heads of
// width HeadDim; query head h reads KV head h/(Heads/KVHeads)) and rotary
// positions in the "rotate half" layout of Llama. The optional parts are
// chosen by [Config]: the biases bq, bk, bv (QKVBias) and bo (OBias), the
// per-head q/k RMSNorms nq, nk applied before RoPE (QKNorm), a tied
// unembedding (TiedEmbed: logits = n(h)·Embedᵀ) and rope scaling (linear,
// llama3, yarn). Rotary tables are computed in float32 exactly as Hugging
// Face computes them, for every model and element type (rope.go). tandem's
// own character model is this architecture with every option off: one
// query per KV head, HeadDim = Dim/Heads, an untied unembedding (so a LoRA
// adapter on it changes only the output layer). Weights are stored as
// [out, in] (the Hugging Face layout), a linear layer computes y = x·Wᵀ.
//
// # Numbers
//
// Every numeric type is generic over [Float] (float32 or float64). Production
// runs in float32; gradient checks run the very same code in float64.
// Reductions whose order could vary (loss sums, gradient norms, AdamW) are
// carried out in float64. A frozen base may keep its matrices in the
// 16-bit format its checkpoint stores ([Matrices16]: bfloat16 or IEEE
// half, as a BF16 or F16 checkpoint loads with hf.WithStoredMatrices,
// memory-mapped): half the memory, and every product computed from the
// 16-bit weights directly (kernels.Par.SgemmBF16, with AMX activations
// held to 16 significant bits, elsewhere bit for bit the float32 product
// of the widened weights; kernels.Par.SgemmF16, bit for bit the float32
// product); the norms, biases, activations and adapters stay in T. A
// bfloat16 base may also round the activations it multiplies to bfloat16
// (Matrices16.RoundActivations, as mixed-precision training does), twice
// the speed of those products on CPUs with AVX512_BF16 and no AMX.
//
// # Determinism
//
// Forward, backward, optimizer step and sampling are deterministic: the
// same inputs give bit-identical outputs for any thread count. Parallel work
// is split over independent outputs (rows of a matrix product, one
// (sequence, head) pair of attention), and every output element is summed in
// one fixed order.
//
// # Parts
//
//   - [Config], [DefaultConfig], [Tokenizer]: the shape of the model and its
//     character-level vocabulary.
//   - [Model]: base weights; [NewModel], [LoadBase], [SaveBase].
//   - [Adapter], [LoraConfig]: LoRA adapters in PEFT layout; [SaveAdapter],
//     [LoadAdapter].
//   - [Trainer]: forward/backward with the Tinker losses ([LossSpec]),
//     AdamW ([AdamParams]), state save/load.
//   - [Sampler]: KV-cached sampling with the adapter applied unmerged.
//     Concurrent Sample calls are batched by a scheduler (continuous
//     batching, as vLLM does): every call in flight decodes in one batched
//     forward per step, each with its own prompt, settings, seed and
//     adapter version, and gets the same bits it would alone; see
//     [SamplerOptions] for the batch, step and KV-memory bounds.
//
// # Memory: one base per process
//
// A LoRA [Trainer] and any number of [Sampler]s share the caller's base
// [Model] read-only: no copy of the frozen weights is made (a full-parameter
// trainer trains a private copy). The caller must not modify the base while
// they use it. Samplers keep a private copy of the served adapter and apply
// it unmerged, y = x·Wᵀ + s·(x·Aᵀ)·Bᵀ, as the trainer does, so serving a new
// adapter version costs a copy of the adapter, not of the base. Base weights
// reach the kernels through one small interface (frozen, weights.go):
// dense []T, bfloat16 or float16.
//
// # API at a glance
//
//	base, _ := engine.NewModel[float32](engine.DefaultConfig(), seed) // or engine.LoadBase[float32](path)
//	tr, _ := engine.NewTrainer(base, engine.DefaultLoraConfig(), engine.TrainerOptions{Threads: 1})
//	out, _ := tr.ForwardBackward(ctx, examples, engine.LossSpec{Name: engine.PPO})
//	_, _ = tr.OptimStep(engine.AdamParams{LearningRate: 1e-4})
//	_ = tr.SaveAdapter(dir)          // PEFT folder, what samplers load
//	_ = tr.SaveState(dir)            // adapter + optimizer.safetensors, for exact resume
//	_ = tr.LoadState(dir, true)
//	lp, _ := tr.BaseLogprobs(ctx, examples) // adapter off, for KL penalties
//
//	s, _ := engine.NewSampler(base, engine.SamplerOptions{Threads: 1})
//	_ = s.LoadAdapter(dir)           // or s.SetAdapter(tr.Adapter()) in memory
//	seqs, promptLP, _ := s.Sample(ctx, prompt, n, engine.SamplingParams{MaxTokens: 16, Temperature: 1, Seed: 1})
//
// Losses follow Tinker: per token, summed with no normalization, targets
// already shifted; see [LossName]. Example carries the per-token inputs
// (weights, sampler log-probs q, advantages).
//
// # Shared prefixes
//
// In RL the examples of a group are one prompt plus different completions,
// consecutive in a batch. The trainer finds runs of consecutive examples
// whose inputs share a prefix of at least TrainerOptions.MinSharedPrefix
// tokens (default [DefaultMinSharedPrefix]), choosing the runs that pack the
// fewest rows, and computes each run's prefix once: the prefix's rows, then
// each example's remaining tokens, whose rotary positions continue from the
// prefix and whose attention sees the prefix and their own earlier tokens
// only. At a shared row each example keeps its own target and loss inputs,
// so log-probabilities, the loss and every gradient are those of the
// unshared computation up to float rounding (tested to 1e-9 relative in
// float64). An RL batch of 16 groups × 8 completions of a 17-token prompt
// packs 2,622 input tokens into 606 rows and trains about 4× faster.
// TrainerOptions.NoPrefixSharing computes every example in full.
//
// # Cost
//
// A training call caches activations: about 50 KiB per packed row for the
// default config in float32 (≈150 MiB for 3,000 rows), about 3.5 MB for
// Qwen3-0.6B's shape with rank-16 LoRA in 256-token sequences. Calls are
// split into micro-batches of at most TrainerOptions.MaxBatchTokens rows and
// TrainerOptions.MaxActivationBytes of activations (1.5 GiB by default:
// about 460 such Qwen3 rows), shared prefixes included. Compute and memory
// scale with packed rows, not input tokens. Logits are computed for a chunk
// of rows at a time (up to 160 MiB of them: 276 rows of a 151,936-token
// vocabulary) and never held for a whole batch (608 KB per row); the
// backward pass recomputes each chunk's logits. Attention runs as matrix
// products per sequence (or shared prefix) and head. A Sample call keeps 2·Layers·KVDim values per cached
// position per sample (the prompt's once).
//
// The package does not import tandem's rl package; backend/local adapts it
// to the rl contracts. Subpackages: safetensors (the file format) and
// kernels (the matrix-product and vector kernels).
package engine
