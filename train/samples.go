package train

import (
	"strings"
	"sync"

	"github.com/tandemrl/tandem/policy"
	"github.com/tandemrl/tandem/rl"
	"github.com/tandemrl/tandem/runlog"
)

// rolloutLog writes every step's trained rollouts to the run folder's
// samples.jsonl (the dashboard's samples page): the prompt and completion
// as text, the return, the version that generated the group and its
// staleness at the step, the replica that answered.
type rolloutLog struct {
	out          *runlog.SampleLog
	every        int // steps (0: none)
	decodePrompt func([]int) string
	decode       func([]int) string

	mu  sync.Mutex
	err error // the first write error
}

// log is the loop's Deps.Rollouts: one line per trajectory of groups.
func (r *rolloutLog) log(step int, version policy.Version, groups []rl.Group) {
	if r.every == 0 || (step+1)%r.every != 0 {
		return
	}
	var batch []runlog.Sample
	for gi := range groups {
		g := &groups[gi]
		for _, tr := range g.Trajectories {
			s := runlog.Sample{Step: step, Group: gi, Reward: tr.Return(), Version: int64(g.Version),
				Staleness: int(g.Staleness(version)), Replica: g.Replica}
			if len(tr.Transitions) > 0 {
				s.Prompt = r.decodePrompt(tr.Transitions[0].Observation.AllTokens())
			}
			var completion strings.Builder
			for _, t := range tr.Transitions {
				completion.WriteString(r.decode(t.Action))
			}
			s.Completion = completion.String()
			batch = append(batch, s)
		}
	}
	if err := r.out.Log(batch); err != nil {
		r.mu.Lock()
		if r.err == nil {
			r.err = err
		}
		r.mu.Unlock()
	}
}

// close closes the file and returns the first error of the run's writes.
func (r *rolloutLog) close() error {
	err := r.out.Close()
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.err != nil {
		return r.err
	}
	return err
}
