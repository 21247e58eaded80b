// Package algo holds tandem's RL algorithms: [GRPO], group-relative
// advantages with dynamic sampling, four objectives for on- and off-policy
// data, and an optional KL penalty against the base model. A GRPO plugs into
// the pipeline as an [rl.Algorithm], and is rl/loop's default; [Config] is
// the only place its objective, loss, correction and KL penalty are set.
// GRPO builds each batch's datums in the memory of the batch before, so
// that the learner's per-sample cost stays a few tens of nanoseconds.
//
// Notation (per action token): μ is the behaviour policy's log-prob (the
// sampler's, recorded with the rollout), p the trainer's current log-prob,
// r = exp(p − log μ), A the advantage. Losses are summed over tokens with no
// hidden normalization, as in Tinker.
//
//	objective  trainer loss                     gradient of the objective
//	naive      importance_sampling              r·A·∇p (r unbounded)
//	ppo        ppo, clipped in [1−ε_lo, 1+ε_hi]   r·A·∇p where the clip does not bind, else 0
//	tis        cispo with thresholds (0, C)     min(r, C)·A·∇p
//	decoupled  ppo against π_prox, A·w          w·r'·A·∇p, r' = π_θ/π_prox clipped, w = π_prox/μ
//
// The decoupled objective (AReaL's decoupled PPO) costs one extra
// Trainer.Forward per batch to compute the proximal policy π_prox: the
// trainer's policy when the batch is built. Its behaviour weight w is not
// clipped but, as in AReaL, a token whose w exceeds BehaviourCap is left out
// (its advantage becomes 0). With one optimizer step per batch, π_θ = π_prox
// when the gradient is taken, so the clip does not bind and the gradient is
// w·A·∇p: the naive gradient with the behaviour filter. The clip binds when
// a learner step is split into substeps and the loop calls [GRPO.Prepare]
// once per step: then one forward pass serves the whole step, and every
// substep clips against the policy of the step's start, as AReaL's
// minibatches do.
//
// The KL penalty follows tinker-cookbook's incorporate_kl_penalty: with
// d_t = log μ_t − log π_base,t on action tokens and d̄ their mean over the
// batch, every action token's advantage gains β·(d̄ − d_t) (optionally as a
// discounted sum over the following tokens). The base log-probs come from a
// [BaseModel]: [SamplerBase] for any rl.Sampler serving the base, or a
// trainer that scores with its adapter off (backend/local's *Trainer has
// the method).
package algo
