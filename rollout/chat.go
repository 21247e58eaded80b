package rollout

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/tandemrl/tandem/chat"
	"github.com/tandemrl/tandem/rl"
)

// ChatProblem is a conversation the model answers as the assistant: each
// turn's observation is the Renderer's generation prompt for the
// conversation so far, the turn stops at the renderer's stop tokens and
// strings, and the sampled ids are parsed back into the assistant's reply
// (its reasoning and tool calls separated) for Respond to score. The
// sampled ids themselves are the turn's action, verbatim: text is never
// decoded and re-encoded for training.
type ChatProblem struct {
	ID string
	// Messages is the conversation before the model's first turn.
	Messages []chat.Message
	Renderer chat.Renderer
	// Respond answers the model's reply, the last message of conv: term
	// says how the completion ended (chat.Malformed when it was cut off
	// without its stop token). It returns the turn's reward and either
	// Done or the messages that follow before the model speaks again (a
	// user turn, tool results). conv is the episode's own; Respond may
	// keep it but not change it.
	Respond func(ctx context.Context, conv []chat.Message, term chat.Termination) (ChatStep, error)
}

// ChatStep is Respond's answer.
type ChatStep struct {
	Reward float64
	Done   bool
	// Then is appended to the conversation before the next turn; it must
	// not be empty unless Done.
	Then    []chat.Message
	Metrics map[string]float64
}

// Key implements Problem.
func (p *ChatProblem) Key() string { return p.ID }

// Envs implements Problem.
func (p *ChatProblem) Envs(_ context.Context, n int) ([]Env, error) {
	switch {
	case p.Renderer == nil:
		return nil, fmt.Errorf("chat problem %q: no Renderer", p.ID)
	case p.Respond == nil:
		return nil, fmt.Errorf("chat problem %q: no Respond", p.ID)
	case len(p.Messages) == 0:
		return nil, fmt.Errorf("chat problem %q: %w", p.ID, chat.ErrEmptyConversation)
	}
	envs := make([]Env, n)
	for i := range envs {
		envs[i] = &chatEnv{p: p, conv: slices.Clone(p.Messages)}
	}
	return envs, nil
}

type chatEnv struct {
	p    *ChatProblem
	conv []chat.Message
}

func (e *chatEnv) Observe(context.Context) (rl.ModelInput, StopCondition, error) {
	ids, err := e.p.Renderer.GenerationPrompt(e.conv, "")
	if err != nil {
		return rl.ModelInput{}, StopCondition{}, fmt.Errorf("chat problem %q: render: %w", e.p.ID, err)
	}
	return rl.Tokens(ids), StopCondition{StopTokens: e.p.Renderer.StopTokens(), StopStrings: e.p.Renderer.StopStrings()}, nil
}

func (e *chatEnv) Step(ctx context.Context, action []int) (StepResult, error) {
	reply, term, err := e.p.Renderer.Parse(action)
	if err != nil {
		return StepResult{}, fmt.Errorf("chat problem %q: parse the completion: %w", e.p.ID, err)
	}
	e.conv = append(e.conv, reply)
	st, err := e.p.Respond(ctx, slices.Clip(e.conv), term)
	if err != nil {
		return StepResult{}, err
	}
	if !st.Done {
		if len(st.Then) == 0 {
			return StepResult{}, fmt.Errorf("chat problem %q: %w", e.p.ID, errNoNextTurn)
		}
		e.conv = append(e.conv, st.Then...)
	}
	return StepResult{Reward: st.Reward, Done: st.Done, Metrics: st.Metrics}, nil
}

var errNoNextTurn = errors.New("Respond returned neither Done nor messages for the next turn")
