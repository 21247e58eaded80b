// Package ui is tandem's local run dashboard: an http.Handler over a runs
// folder (one folder per `tandem train` run, holding config.json,
// metrics.jsonl, summary.json, samples.jsonl and checkpoints/). It serves
// the runs list, a page per run with server-rendered SVG charts that a
// server-sent-events stream extends live as metrics.jsonl grows, a version
// timeline, a compare page, a run's checkpoints with their manifests and a
// playground that samples from them through the embedded engine, and a page
// of the rollouts of a step. Everything it serves is embedded (two small
// scripts: hover values, zoom, live updates, the playground form); it
// reaches nothing outside the runs folder.
//
// Endpoints:
//
//	GET  /                             runs list (?format=json: the rows as JSON)
//	GET  /runs/{run}[?from=A&to=B]     one run: charts (of steps A..B), version timeline, bad lines, config
//	GET  /runs/{run}/events?offset=N   SSE: metrics lines appended after byte N
//	GET  /runs/{run}/checkpoints       the run's checkpoint store, with manifests, and the playground
//	POST /runs/{run}/sample            playground: completions as JSON (see [Sampler])
//	GET  /runs/{run}/samples[?step=N]  the rollouts of step N (default: the last) from samples.jsonl
//	GET  /compare?run=A&run=B[&run=…]  runs overlaid, and their config diff
//	GET  /static/{file}                the embedded scripts and style sheet
//
// # samples.jsonl
//
// A run folder may hold samples.jsonl, written by runlog.SampleLog: one
// JSON object per rollout a step trained on, appended as steps end:
//
//	{"step":12,"group":3,"prompt":"What is 12 + 35?","completion":" 47","reward":1,"version":11,"staleness":1,"replica":"r0"}
//
// step is the learner step (as in metrics.jsonl), group the rollout's group
// in the batch, reward its return, version the policy version that
// generated it, staleness the step's version minus version, and replica
// (optional) the sampler replica that answered. Unknown fields are ignored;
// a line that does not parse, or has a non-finite reward or a negative
// count, is listed as bad and skipped. The samples page reads at most the
// file's last 64 MiB (the latest steps); the version timeline draws each
// replica's served versions from it when it is at most 16 MiB.
//
// # Charts
//
// Charts are SVG rendered by the server, with no charting library: a page
// is complete without its scripts, its size is bounded (MaxPoints per
// series, however long the run), and there is nothing to vendor or keep
// up to date. assets/static/chart.js only moves what the server drew: hover
// values, drag-to-zoom (the ?from=&to= form zooms at full resolution on the
// server) and points a live run streams.
//
// # Playground
//
// POST /runs/{run}/sample takes form fields checkpoint (a tinker:// URI
// from the run's checkpoints page; empty for the base model), prompt (at
// most MaxPromptBytes), max_tokens (1..MaxSampleTokens), temperature
// (0..MaxTemperature), seed and n (1..MaxSampleN), and answers JSON
// {checkpoint, prompt, completions: [{text, tokens, logprob, stop_reason}],
// seconds, error}. A checkpoint resolves only inside the run folder's
// checkpoints/ store (the URI's run, kind and name must be valid store
// names); requests another site's page sends are refused; one sample runs
// at a time. The Sampler option replaces the in-process engine.
package ui
