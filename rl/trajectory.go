package rl

import "github.com/tandemrl/tandem/policy"

// Transition is one turn of an episode: what the model saw, what it
// produced, the sampler's log-prob of each produced token and the reward the
// environment gave for it.
//
// Slices are owned by the Transition once it is built; code that keeps a
// Transition must not modify them.
type Transition struct {
	// Observation is the model input of this turn (the whole context the
	// sampler was given).
	Observation ModelInput `json:"observation"`
	// Action holds the sampled tokens.
	Action []int `json:"action"`
	// Logprobs holds the sampler's log-prob of each Action token (same
	// length as Action).
	Logprobs []float64 `json:"logprobs"`
	// Reward is the reward the environment gave after this action.
	Reward float64 `json:"reward"`
	// StopReason says why sampling of this action stopped.
	StopReason StopReason `json:"stop_reason,omitempty"`
	// Version is the policy version that sampled this action.
	Version policy.Version `json:"version"`
}

// Trajectory is one episode: its turns in order. A single-turn problem has
// one Transition.
type Trajectory struct {
	Transitions []Transition       `json:"transitions"`
	Metrics     map[string]float64 `json:"metrics,omitempty"`
}

// Return is the sum of the rewards of every transition.
func (t Trajectory) Return() float64 {
	var r float64
	for i := range t.Transitions {
		r += t.Transitions[i].Reward
	}
	return r
}

// Tokens returns the number of action tokens over all turns.
func (t Trajectory) Tokens() int {
	n := 0
	for i := range t.Transitions {
		n += len(t.Transitions[i].Action)
	}
	return n
}

// Group is the unit the pipeline moves: GroupSize trajectories rolled out
// from one dataset item, compared with each other by group-relative
// algorithms.
type Group struct {
	// ID numbers groups in the order the buffer accepted them within a run.
	ID uint64 `json:"id"`
	// Key identifies the dataset item the group came from.
	Key string `json:"key,omitempty"`
	// Version is the policy version that generated the group's first token;
	// when trajectories were sampled by several versions, the oldest wins.
	Version policy.Version `json:"version"`
	// Admitted is the version the sampler served when the rollout was
	// admitted (Admitted ≤ Version); the buffer trains groups in Admitted
	// order so that the staleness gate's promise holds.
	Admitted policy.Version `json:"admitted"`
	// Trajectories holds GroupSize episodes.
	Trajectories []Trajectory `json:"trajectories"`
	// Metrics holds numbers the environment or rollout reported.
	Metrics map[string]float64 `json:"metrics,omitempty"`
	// Replica is the sampler replica that produced a single-turn group
	// (SampleOutput.Replica); "" when unknown.
	Replica string `json:"replica,omitempty"`
	// Source is the dataset item that produced the group; the loop hands it
	// back to the dataset when the group is requeued. Not serialized.
	Source any `json:"-"`
	// Memory is an opaque handle its producer uses to take back the
	// memory of Trajectories once the group has been trained (see
	// Algorithm and rollout.Runner.Recycle). Not serialized.
	Memory any `json:"-"`
}

// Staleness returns the group's staleness when the learner is at version
// learner.
func (g *Group) Staleness(learner policy.Version) int64 {
	return policy.Staleness(learner, g.Version)
}

// Samples returns the number of trajectories.
func (g *Group) Samples() int { return len(g.Trajectories) }

// MeanReturn returns the mean return of the group's trajectories (0 for an
// empty group).
func (g *Group) MeanReturn() float64 {
	if len(g.Trajectories) == 0 {
		return 0
	}
	var s float64
	for i := range g.Trajectories {
		s += g.Trajectories[i].Return()
	}
	return s / float64(len(g.Trajectories))
}
