package tinker

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/tandemrl/tandem/policy"
	"github.com/tandemrl/tandem/rl"
	"github.com/tandemrl/tandem/sync/serial"
	"github.com/tandemrl/tandem/wire"
)

// Chunking of forward/forward_backward batches in ModeJSON, as SDK v0.3.0
// does (training_client.py): at most 128 datums and about 500,000 numbers
// per request, each chunk its own seq_id, results concatenated. ModeProto
// takes its limits from the server's client/config (see Client.ServerConfig).
const (
	MaxChunkLen     = 128
	MaxChunkNumbers = 500_000
)

// Trainer drives one model of a Tinker-compatible server; it implements
// rl.Trainer. Calls are numbered with seq_id 1, 2, 3, … in submission
// order, sent one after another in that order, and resolved in that order:
// two serial.Queues carry them, one sending (a call is sent as soon as the
// one before it has been sent, without waiting for its result) and one
// polling the results and resolving the futures. Their goroutines belong
// to the Client, whose Close waits for them.
//
// The ctx given to a call only matters before the call is queued: once a
// method has returned, the call is sent and completed under the Client's
// lifetime (so that no seq_id is left out, which would stall later calls on
// the server); cancelling ctx stops a Wait, not the call.
type Trainer struct {
	c     *Client
	model string
	base  string

	send, done *serial.Queue // owned by c

	mu      sync.Mutex // orders submissions on both queues; guards the fields below
	nextSeq int64
	version policy.Version
}

var _ rl.Trainer = (*Trainer)(nil)

func newTrainer(c *Client, model, base string) *Trainer {
	return &Trainer{c: c, model: model, base: base, send: c.newQueue(), done: c.newQueue(), nextSeq: 1}
}

// ModelID returns the server's id of the model.
func (t *Trainer) ModelID() string { return t.model }

// Version returns the policy version after the calls resolved so far.
func (t *Trainer) Version() policy.Version {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.version
}

// run carries one call of parts requests: it takes the next seq_ids, queues
// the sending of each part (bodies builds part i's request for its seq_id)
// and then the polling of their results, which finish turns into the
// value (it runs under t.mu, in call order, and may update the version).
// A forward or forward_backward result is polled with pollAny (it may come
// in protobuf); the others are JSON.
func run[T any](t *Trainer, ctx context.Context, endpoint string, parts int,
	bodies func(i int, seq int64) any, finish func(raws []answer) (T, error)) *rl.Future[T] {
	if err := ctx.Err(); err != nil {
		return rl.Failed[T](context.Cause(ctx))
	}
	if err := t.c.ctx.Err(); err != nil {
		return rl.Failed[T](fmt.Errorf("tinker: %s (model %s): %w", endpoint, t.model, context.Cause(t.c.ctx)))
	}
	life := t.c.ctx
	t.mu.Lock()
	defer t.mu.Unlock()
	seqs := make([]int64, parts)
	for i := range seqs {
		seqs[i] = t.nextSeq
		t.nextSeq++
	}
	wrap := func(err error) error {
		return fmt.Errorf("tinker: %s (model %s, seq_id %v): %w", endpoint, t.model, seqs, err)
	}
	sent := serial.Submit(t.send, life, func(ctx context.Context) ([]string, error) {
		ids := make([]string, len(seqs))
		for i, seq := range seqs {
			id, err := t.c.submit(ctx, endpoint, bodies(i, seq), nil)
			if err != nil {
				return nil, err
			}
			ids[i] = id
		}
		return ids, nil
	})
	return serial.Submit(t.done, life, func(ctx context.Context) (T, error) {
		var zero T
		ids, err := sent.Wait(ctx)
		if err != nil {
			return zero, wrap(err)
		}
		raws := make([]answer, len(ids))
		for i, id := range ids {
			if endpoint == "forward_backward" || endpoint == "forward" {
				raws[i], err = t.c.pollAny(ctx, id)
			} else {
				raws[i].body, err = t.c.poll(ctx, id)
			}
			if err != nil {
				return zero, wrap(err)
			}
		}
		t.mu.Lock()
		defer t.mu.Unlock()
		val, err := finish(raws)
		if err != nil {
			return zero, wrap(err)
		}
		return val, nil
	})
}

// chunks splits data as the SDK does, within lim.
func chunks(data []rl.Datum, lim chunkLimits) [][]rl.Datum {
	var out [][]rl.Datum
	var cur []rl.Datum
	n := 0
	for _, d := range data {
		k := d.ModelInput.Len()
		for _, v := range d.LossFnInputs {
			k += v.Len()
		}
		k *= lim.perNumber
		if len(cur) > 0 && (n+k > lim.maxCost || len(cur) == lim.maxLen) {
			out = append(out, cur)
			cur, n = nil, 0
		}
		cur = append(cur, d)
		n += k
	}
	if len(cur) > 0 || len(out) == 0 {
		out = append(out, cur)
	}
	return out
}

func seqPtr(n int64) *int64 { return &n }

func (t *Trainer) pass(ctx context.Context, data []rl.Datum, loss rl.Loss, forward bool) *rl.Future[rl.ForwardBackwardOutput] {
	parts := chunks(data, t.c.chunking)
	proto := t.c.mode == ModeProto
	endpoint := "forward_backward"
	if forward && !proto {
		endpoint = "forward" // SDK v0.25.0 sends a forward to forward_backward, forward_only set
	}
	return run(t, ctx, endpoint, len(parts), func(i int, seq int64) any {
		r := wire.ForwardBackwardRequest{Input: wire.ForwardBackwardInput{Data: parts[i], Loss: loss}, ModelID: t.model, SeqID: seqPtr(seq), Forward: forward}
		if proto {
			return protoRequest(r)
		}
		return r
	}, func(raws []answer) (rl.ForwardBackwardOutput, error) {
		outs := make([]wire.ForwardBackwardOutput, len(raws))
		for i, r := range raws {
			decode := wire.DecodeForwardBackwardOutput
			if r.proto {
				decode = wire.DecodeForwardBackwardOutputProto
			}
			o, err := decode(r.body)
			if err != nil {
				return rl.ForwardBackwardOutput{}, err
			}
			outs[i] = o
		}
		return combine(outs), nil
	})
}

// combine joins chunk results: outputs concatenated; metrics reduced by
// the suffix of their name (sum, mean weighted by outputs, min, max), as
// the SDK's chunked_fwdbwd_helpers.py does; other metrics keep the first
// chunk's value.
func combine(outs []wire.ForwardBackwardOutput) rl.ForwardBackwardOutput {
	if len(outs) == 1 {
		return outs[0].ToRL()
	}
	res := rl.ForwardBackwardOutput{Metrics: map[string]float64{}}
	total := 0
	for _, o := range outs {
		res.LossFnOutputs = append(res.LossFnOutputs, o.LossFnOutputs...)
		total += len(o.LossFnOutputs)
	}
	for k := range outs[0].Metrics {
		_, red, _ := strings.Cut(k, ":")
		v := outs[0].Metrics[k]
		for i, o := range outs {
			x := o.Metrics[k]
			switch red {
			case "sum":
				if i > 0 {
					v += x
				}
			case "mean":
				if i == 0 {
					v = 0
				}
				if total > 0 {
					v += x * float64(len(o.LossFnOutputs)) / float64(total)
				}
			case "min":
				v = min(v, x)
			case "max":
				v = max(v, x)
			}
		}
		res.Metrics[k] = v
	}
	return res
}

// ForwardBackward queues a forward-backward pass.
func (t *Trainer) ForwardBackward(ctx context.Context, data []rl.Datum, loss rl.Loss) *rl.Future[rl.ForwardBackwardOutput] {
	return t.pass(ctx, data, loss, false)
}

// Forward queues a forward pass.
func (t *Trainer) Forward(ctx context.Context, data []rl.Datum, loss rl.Loss) *rl.Future[rl.ForwardBackwardOutput] {
	return t.pass(ctx, data, loss, true)
}

// OptimStep queues an optimizer step; its output carries the version after it.
func (t *Trainer) OptimStep(ctx context.Context, p rl.AdamParams) *rl.Future[rl.OptimStepOutput] {
	if err := p.Validate(); err != nil {
		return rl.Failed[rl.OptimStepOutput](err)
	}
	return run(t, ctx, "optim_step", 1, func(_ int, seq int64) any {
		return wire.OptimStepRequest{AdamParams: p, ModelID: t.model, SeqID: seqPtr(seq)}
	}, func(raws []answer) (rl.OptimStepOutput, error) {
		r, err := wire.DecodeOptimStepResponse(raws[0].body)
		if err != nil {
			return rl.OptimStepOutput{}, err
		}
		t.version++
		return rl.OptimStepOutput{Version: t.version, Metrics: r.Metrics}, nil
	})
}

func (t *Trainer) save(ctx context.Context, name string, kind policy.Kind) *rl.Future[policy.Ref] {
	if err := wire.ValidName(name); err != nil {
		return rl.Failed[policy.Ref](fmt.Errorf("tinker: checkpoint %w", err))
	}
	endpoint := "save_weights"
	if kind == policy.SamplerWeights {
		endpoint = "save_weights_for_sampler"
	}
	return run(t, ctx, endpoint, 1, func(_ int, seq int64) any {
		if kind == policy.SamplerWeights {
			return wire.SaveWeightsForSamplerRequest{ModelID: t.model, Path: name, SeqID: seqPtr(seq)}
		}
		return wire.SaveWeightsRequest{ModelID: t.model, Path: name, SeqID: seqPtr(seq)}
	}, func(raws []answer) (policy.Ref, error) {
		r, err := wire.DecodePathResponse(raws[0].body, true)
		if err != nil {
			return policy.Ref{}, err
		}
		return policy.Ref{Run: t.model, Version: t.version, Name: name, URI: r.Path, Kind: kind, Created: time.Now()}, nil
	})
}

// SaveForSampler saves the adapter for samplers; the Ref's URI is the
// tinker://<model>/sampler_weights/<name> path the server answered.
func (t *Trainer) SaveForSampler(ctx context.Context, name string) *rl.Future[policy.Ref] {
	return t.save(ctx, name, policy.SamplerWeights)
}

// SaveState saves adapter and optimizer state (the SDK's save_state).
func (t *Trainer) SaveState(ctx context.Context, name string) *rl.Future[policy.Ref] {
	return t.save(ctx, name, policy.State)
}

// LoadState loads a state saved by SaveState (ref.URI a tinker:// weights
// path); the version becomes ref.Version.
func (t *Trainer) LoadState(ctx context.Context, ref policy.Ref, withOptimizer bool) *rl.Future[struct{}] {
	if _, err := wire.ParseTinkerPath(ref.URI); err != nil {
		return rl.Failed[struct{}](err)
	}
	return run(t, ctx, "load_weights", 1, func(_ int, seq int64) any {
		return wire.LoadWeightsRequest{ModelID: t.model, Path: ref.URI, Optimizer: withOptimizer, SeqID: seqPtr(seq)}
	}, func(raws []answer) (struct{}, error) {
		if _, err := wire.DecodePathResponse(raws[0].body, false); err != nil {
			return struct{}{}, err
		}
		t.version = ref.Version
		return struct{}{}, nil
	})
}

// Unload waits for the calls already submitted to resolve, then asks the
// server to unload the model (POST unload_model). Calls submitted after
// Unload fail on the server.
func (t *Trainer) Unload(ctx context.Context) error {
	t.mu.Lock()
	f := serial.Submit(t.done, ctx, func(ctx context.Context) (struct{}, error) {
		id, err := t.c.submit(ctx, "unload_model", wire.ModelRequest{ModelID: t.model}, nil)
		if err == nil {
			_, err = t.c.poll(ctx, id)
		}
		return struct{}{}, err
	})
	t.mu.Unlock()
	if _, err := f.Wait(ctx); err != nil {
		return fmt.Errorf("tinker: unload model %s: %w", t.model, err)
	}
	return nil
}
