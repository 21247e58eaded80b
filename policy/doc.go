// Package policy names the versions of a policy that a run produces and
// where their adapters live.
//
// A [Version] is an integer: version 0 is the base model with a fresh adapter,
// and every optimizer step the learner applies makes version v+1. A [Tag]
// names a version of a run ("arith-grpo@17"); a [Ref] is a published
// version's adapter reference (a local path or a tinker:// URI). A [Registry]
// records published versions; samplers and the learner watch it.
package policy
