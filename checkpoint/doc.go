// Package checkpoint stores the checkpoints a run saves — adapters for
// samplers and full training states — and moves them between machines.
//
// # Layout
//
// A [Store] is a folder. Each checkpoint is a folder at
//
//	<root>/<run>/<kind>/<name>/
//
// where kind is "sampler_weights" ([policy.SamplerWeights]) or "weights"
// ([policy.State]). It holds whatever files its writer put there (a PEFT
// adapter: adapter_config.json and adapter_model.safetensors; for a full
// state also optimizer state) and a manifest.json written last by the store:
// run, name, kind, version, step, base model, created time, metrics, and each
// file's name, size and SHA-256. Run and checkpoint names follow
// [policy.ValidRunName]: 1–128 letters, digits, '-', '_' and '.', not
// starting with '.', so no name can escape the root.
//
// # Atomicity
//
// [Store.Save] and [Store.Download] build a checkpoint in a temporary folder
// inside the root (".tmp-*"), fsync every file and folder, rename it into
// place and fsync the parent. A crash at any point leaves either nothing
// visible or the whole checkpoint; leftovers are hidden from listings and
// removed by [Store.Clean]. [Store.Delete] renames a checkpoint out of the
// layout before removing it, and [Export] uses the same temp-and-rename
// scheme beside its target. [Checkpoint.Verify] rehashes the files against
// the manifest on demand.
//
// # Addressing and transfer
//
// [ParseURI] reads tinker://<run>/(weights|sampler_weights)/<name>,
// bt://loops:<run>/(weights|sampler_weights)/<name> and local paths, and
// maps them to and from [policy.Ref]. [Store.Source] answers where a
// checkpoint can be read from: a volume path, or an HTTP URL carrying an
// expiring HMAC signature made by a [Signer]. [NewHandler] serves checkpoint
// archives (package archive) for valid signatures only, and [Download]
// fetches one, with retries, verifies it and installs it atomically.
//
// # Concurrency
//
// A Store is safe for concurrent use by many goroutines and by many
// processes sharing the root: visibility changes only by rename.
package checkpoint
