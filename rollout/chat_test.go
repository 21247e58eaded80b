package rollout_test

import (
	"context"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/tandemrl/tandem/basemodel"
	"github.com/tandemrl/tandem/chat"
	"github.com/tandemrl/tandem/policy"
	"github.com/tandemrl/tandem/rl"
	"github.com/tandemrl/tandem/rollout"
	"github.com/tandemrl/tandem/tokenizer"
)

// scripted answers each Sample call with the next of its completions,
// encoded with tok, and remembers what it was asked.
type scripted struct {
	mu      sync.Mutex
	tok     *tokenizer.Tokenizer
	replies []string
	prompts [][]int
	params  []rl.SamplingParams
}

func (s *scripted) Sample(_ context.Context, p rl.ModelInput, n int, sp rl.SamplingParams) (rl.SampleOutput, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.prompts = append(s.prompts, p.AllTokens())
	s.params = append(s.params, sp)
	ids := s.tok.Encode(s.replies[0], tokenizer.EncodeOptions{})
	s.replies = s.replies[1:]
	return rl.SampleOutput{Sequences: []rl.Sequence{{Tokens: ids, Logprobs: make([]float64, len(ids))}}, Version: 3}, nil
}

func (s *scripted) Load(context.Context, policy.Ref) error { return nil }

// A two-turn conversation on the shipped character tokenizer with the
// role-colon renderer: each observation is the renderer's generation
// prompt for the conversation so far, each turn stops at the renderer's
// stop string, the sampled ids are the actions verbatim, Respond sees the
// parsed replies, and a cut-off reply is Malformed.
func TestChatProblem(t *testing.T) {
	t.Parallel()
	tok, err := basemodel.Tokenizer()
	require.NoError(t, err)
	r, err := chat.New("role_colon", tok, tok.Config())
	require.NoError(t, err)
	s := &scripted{tok: tok, replies: []string{" 4\n\nUser:", " 6, no more"}}
	var seen []string
	var terms []chat.Termination
	p := &rollout.ChatProblem{ID: "sums", Renderer: r,
		Messages: []chat.Message{{Role: chat.RoleUser, Content: "What is 2+2?"}},
		Respond: func(_ context.Context, conv []chat.Message, term chat.Termination) (rollout.ChatStep, error) {
			reply := conv[len(conv)-1]
			seen = append(seen, reply.Content)
			terms = append(terms, term)
			if len(conv) == 2 {
				return rollout.ChatStep{Reward: 1, Then: []chat.Message{{Role: chat.RoleUser, Content: "And 3+3?"}}}, nil
			}
			return rollout.ChatStep{Reward: 0.5, Done: true}, nil
		}}
	run := &rollout.Runner{Samplers: []rl.Sampler{s}, GroupSize: 1, Params: rl.SamplingParams{MaxTokens: 16}}
	g, err := run.Rollout(context.Background(), p)
	require.NoError(t, err)
	require.Len(t, g.Trajectories, 1)
	tr := g.Trajectories[0].Transitions
	require.Len(t, tr, 2)
	assert.Equal(t, []string{"4", "6, no more"}, seen)
	assert.Equal(t, []chat.Termination{chat.StopSequence, chat.Malformed}, terms)
	assert.Equal(t, 1.5, g.Trajectories[0].Return())

	first, err := r.GenerationPrompt(p.Messages, "")
	require.NoError(t, err)
	second, err := r.GenerationPrompt([]chat.Message{p.Messages[0], {Role: chat.RoleAssistant, Content: "4"},
		{Role: chat.RoleUser, Content: "And 3+3?"}}, "")
	require.NoError(t, err)
	assert.Equal(t, [][]int{first, second}, s.prompts)
	assert.Equal(t, first, tr[0].Observation.AllTokens())
	assert.Equal(t, tok.Encode(" 4\n\nUser:", tokenizer.EncodeOptions{}), tr[0].Action, "the sampled ids, verbatim")
	for _, sp := range s.params {
		assert.Equal(t, r.StopStrings(), sp.StopStrings)
		assert.Equal(t, 16, sp.MaxTokens)
	}
	assert.Equal(t, []chat.Message{{Role: chat.RoleUser, Content: "What is 2+2?"}}, p.Messages, "the problem's own conversation is untouched")
}

func TestChatProblemErrors(t *testing.T) {
	t.Parallel()
	tok, err := basemodel.Tokenizer()
	require.NoError(t, err)
	r, err := chat.New("role_colon", tok, tok.Config())
	require.NoError(t, err)
	respond := func(context.Context, []chat.Message, chat.Termination) (rollout.ChatStep, error) {
		return rollout.ChatStep{}, nil // neither done nor a next turn
	}
	msgs := []chat.Message{{Role: chat.RoleUser, Content: "hi"}}
	for name, p := range map[string]*rollout.ChatProblem{
		"no renderer": {ID: "a", Messages: msgs, Respond: respond},
		"no respond":  {ID: "a", Messages: msgs, Renderer: r},
		"empty":       {ID: "a", Renderer: r, Respond: respond},
	} {
		_, err := p.Envs(context.Background(), 1)
		assert.Error(t, err, name)
	}
	s := &scripted{tok: tok, replies: []string{" x\n\nUser:"}}
	run := &rollout.Runner{Samplers: []rl.Sampler{s}, GroupSize: 1, Params: rl.SamplingParams{MaxTokens: 16}}
	_, err = run.Rollout(context.Background(), &rollout.ChatProblem{ID: "a", Messages: msgs, Renderer: r, Respond: respond})
	assert.ErrorContains(t, err, "neither Done nor messages")
}
