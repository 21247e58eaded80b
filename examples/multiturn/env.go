package main

import (
	"context"
	"fmt"

	"github.com/tandemrl/tandem/engine"
	"github.com/tandemrl/tandem/reward"
	"github.com/tandemrl/tandem/rl"
	"github.com/tandemrl/tandem/rollout"
)

// guess is one episode of guess-the-number: the model names a number, the
// environment answers "Higher?" or "Lower?" (asking for the next guess), for
// at most maxTurns turns.
// Finding the number earns 1, minus 0.1 for every extra turn it took.
type guess struct {
	secret   int
	maxTurns int
	turn     int
	context  []int // everything said so far, the model's turns included
	tok      engine.Tokenizer
}

const question = "What is it?"

// maxContext is the model's context; an episode that would outgrow it ends.
const maxContext = 128

// actionTokens bounds one guess.
const actionTokens = 6

func newGuess(secret, maxTurns int) *guess {
	g := &guess{secret: secret, maxTurns: maxTurns}
	g.context = append([]int{engine.BOS}, g.encode("My number is 0 to 99.\n"+question)...)
	return g
}

func (g *guess) encode(s string) []int {
	ids, err := g.tok.Encode(s)
	if err != nil {
		panic(err) // ASCII only: cannot happen
	}
	return ids
}

// Observe implements rollout.Env: the whole conversation so far; the
// model's turn ends at a newline.
func (g *guess) Observe(context.Context) (rl.ModelInput, rollout.StopCondition, error) {
	obs := append([]int(nil), g.context...)
	return rl.Tokens(obs), rollout.StopCondition{MaxTokens: actionTokens, StopTokens: []int{engine.Newline}}, nil
}

// Step implements rollout.Env.
func (g *guess) Step(_ context.Context, action []int) (rollout.StepResult, error) {
	g.turn++
	g.context = append(g.context, action...)
	n, ok := reward.LastInteger(g.tok.Decode(action))
	switch {
	case ok && int(n) == g.secret:
		return rollout.StepResult{Reward: 1 - 0.1*float64(g.turn-1), Done: true, Metrics: map[string]float64{"turns": float64(g.turn)}}, nil
	case g.turn >= g.maxTurns:
		return rollout.StepResult{Done: true, Metrics: map[string]float64{"turns": float64(g.turn)}}, nil
	}
	hint := "Higher?"
	if !ok {
		hint = "A number?"
	} else if int(n) > g.secret {
		hint = "Lower?"
	}
	if g.context[len(g.context)-1] != engine.Newline {
		g.context = append(g.context, engine.Newline)
	}
	g.context = append(g.context, g.encode(hint)...)
	if len(g.context)+actionTokens > maxContext {
		// Another turn would not fit the model's context: the episode ends
		// unsolved.
		return rollout.StepResult{Done: true, Metrics: map[string]float64{"turns": float64(g.turn), "out_of_context": 1}}, nil
	}
	return rollout.StepResult{}, nil
}

// problem is one secret number; its group is GroupSize episodes guessing it.
type problem struct{ secret, maxTurns int }

func (p problem) Key() string { return fmt.Sprintf("secret-%d", p.secret) }

func (p problem) Envs(_ context.Context, n int) ([]rollout.Env, error) {
	envs := make([]rollout.Env, n)
	for i := range envs {
		envs[i] = newGuess(p.secret, p.maxTurns)
	}
	return envs, nil
}
