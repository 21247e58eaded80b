package sim

import (
	"context"
	"fmt"
	"math"
	"sync"
	"time"

	"github.com/tandemrl/tandem/policy"
	"github.com/tandemrl/tandem/rl"
	"github.com/tandemrl/tandem/sync/serial"
)

// TrainerConfig sets a simulated trainer's behaviour.
type TrainerConfig struct {
	// Latencies of each call (nil = zero). Calls run one after another in
	// submission order, so a ForwardBackward followed by an OptimStep takes
	// the sum of both.
	ForwardBackward, Forward, OptimStep, Save Latency
	// Run names the run in the refs it returns (default "sim").
	Run string
	// Start is the version the trainer holds at first (a resumed run).
	Start policy.Version
	// NoOutputs skips the per-token log-probs of forward passes and the
	// datum checks: a forward pass then costs nothing (for overhead
	// benchmarks; the loop cannot report the sampler/trainer gap).
	NoOutputs bool
}

// Trainer is a simulated rl.Trainer. Its version counts the optimizer steps
// applied (from Start); the values it returns are computed in submission
// order, when the call is submitted. It is safe for concurrent use.
//
// Results are handed back through a serial.Queue, like every tandem
// trainer's: each queued call waits until its simulated completion time
// (the previous call's, or now if that has passed, plus its own latency),
// so latencies add up as on one device. A zero-latency call on an idle
// trainer skips the queue and returns a resolved Future, which keeps the
// simulator at a few hundred nanoseconds a call; no goroutine runs while
// the trainer is idle, so it needs no Close.
type Trainer struct {
	cfg   TrainerConfig
	mu    sync.Mutex // orders submissions; guards the fields below
	ver   policy.Version
	steps int64
	saved map[string]policy.Version
	tail  time.Time // simulated completion time of the last queued call
	q     serial.Queue
}

var _ rl.Trainer = (*Trainer)(nil)

// NewTrainer returns a trainer at version cfg.Start.
func NewTrainer(cfg TrainerConfig) *Trainer {
	if cfg.Run == "" {
		cfg.Run = "sim"
	}
	return &Trainer{cfg: cfg, ver: cfg.Start, saved: make(map[string]policy.Version)}
}

// Version returns the version after every call submitted so far.
func (t *Trainer) Version() policy.Version {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.ver
}

// OptimSteps returns the number of optimizer steps submitted.
func (t *Trainer) OptimSteps() int64 {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.steps
}

// submit computes the call's result now, in submission order, and
// resolves its Future after lat on the simulated device.
func submit[T any](t *Trainer, ctx context.Context, lat Latency, compute func() (T, error)) *rl.Future[T] {
	if err := ctx.Err(); err != nil {
		return rl.Failed[T](context.Cause(ctx))
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	val, err := compute()
	d := draw(lat)
	if d <= 0 && t.q.Idle() {
		return rl.Resolved(val, err)
	}
	due := time.Now()
	if due.Before(t.tail) {
		due = t.tail
	}
	due = due.Add(d)
	t.tail = due
	// Once submitted, a call completes whatever happens to ctx, as on a
	// real trainer; its turn on the queue is not skipped.
	return serial.Submit(&t.q, context.WithoutCancel(ctx), func(context.Context) (T, error) {
		if w := time.Until(due); w > 0 {
			time.Sleep(w)
		}
		return val, err
	})
}

// ForwardBackward implements rl.Trainer: it checks the datums and returns
// the trainer's log-prob of every target token and the loss.
func (t *Trainer) ForwardBackward(ctx context.Context, data []rl.Datum, loss rl.Loss) *rl.Future[rl.ForwardBackwardOutput] {
	return submit(t, ctx, t.cfg.ForwardBackward, func() (rl.ForwardBackwardOutput, error) { return t.forward(data, loss) })
}

// Forward implements rl.Trainer.
func (t *Trainer) Forward(ctx context.Context, data []rl.Datum, loss rl.Loss) *rl.Future[rl.ForwardBackwardOutput] {
	return submit(t, ctx, t.cfg.Forward, func() (rl.ForwardBackwardOutput, error) { return t.forward(data, loss) })
}

func (t *Trainer) forward(data []rl.Datum, loss rl.Loss) (rl.ForwardBackwardOutput, error) {
	if t.cfg.NoOutputs {
		return rl.ForwardBackwardOutput{}, nil
	}
	out := rl.ForwardBackwardOutput{Metrics: map[string]float64{"loss:sum": 0}}
	out.LossFnOutputs = make([]map[string]rl.TensorData, len(data))
	var lossSum float64
	for i := range data {
		d := &data[i]
		n := d.ModelInput.Len()
		tgt, ok := d.LossFnInputs[rl.InputTargetTokens]
		if !ok || tgt.Len() != n {
			return rl.ForwardBackwardOutput{}, fmt.Errorf("sim: datum %d: target_tokens has %d elements, want one per input token (%d)", i, tgt.Len(), n)
		}
		lp, adv := d.LossFnInputs[rl.InputLogprobs], d.LossFnInputs[rl.InputAdvantages]
		w := d.LossFnInputs[rl.InputWeights]
		ps := make([]float64, n)
		for p := range n {
			ps[p] = LogProb(t.ver, int(tgt.Ints[p]), p+1)
			switch loss.Name {
			case rl.CrossEntropy:
				if p < len(w.Floats) {
					lossSum -= w.Floats[p] * ps[p]
				}
			default:
				if p < len(lp.Floats) && p < len(adv.Floats) && adv.Floats[p] != 0 {
					lossSum -= math.Exp(ps[p]-lp.Floats[p]) * adv.Floats[p]
				}
			}
		}
		out.LossFnOutputs[i] = map[string]rl.TensorData{rl.InputLogprobs: rl.FloatTensor(ps)}
	}
	out.Metrics["loss:sum"] = lossSum
	return out, nil
}

// OptimStep implements rl.Trainer: the version increases by one.
func (t *Trainer) OptimStep(ctx context.Context, p rl.AdamParams) *rl.Future[rl.OptimStepOutput] {
	return submit(t, ctx, t.cfg.OptimStep, func() (rl.OptimStepOutput, error) {
		if err := p.Validate(); err != nil {
			return rl.OptimStepOutput{}, err
		}
		t.ver++
		t.steps++
		return rl.OptimStepOutput{Version: t.ver}, nil
	})
}

func (t *Trainer) ref(name string, kind policy.Kind) policy.Ref {
	return policy.Ref{Run: t.cfg.Run, Version: t.ver, Name: name, Kind: kind,
		URI: "sim://" + t.cfg.Run + "/" + string(kind) + "/" + name, Created: time.Now()}
}

// SaveForSampler implements rl.Trainer.
func (t *Trainer) SaveForSampler(ctx context.Context, name string) *rl.Future[policy.Ref] {
	return submit(t, ctx, t.cfg.Save, func() (policy.Ref, error) { return t.ref(name, policy.SamplerWeights), nil })
}

// SaveState implements rl.Trainer.
func (t *Trainer) SaveState(ctx context.Context, name string) *rl.Future[policy.Ref] {
	return submit(t, ctx, t.cfg.Save, func() (policy.Ref, error) {
		t.saved[name] = t.ver
		return t.ref(name, policy.State), nil
	})
}

// LoadState implements rl.Trainer: the version becomes the saved one.
func (t *Trainer) LoadState(ctx context.Context, ref policy.Ref, _ bool) *rl.Future[struct{}] {
	return submit(t, ctx, t.cfg.Save, func() (struct{}, error) {
		v, ok := t.saved[ref.Name]
		if !ok {
			v = ref.Version
		}
		t.ver = v
		return struct{}{}, nil
	})
}
