package steplog

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/tandemrl/tandem/policy"
	"github.com/tandemrl/tandem/server"
)

// script builds a model's records from a compact description: one entry
// per call, seq_ids counted from 0, versions tracked the way the server
// does.
type script struct {
	model string
	seq   int64
	v     policy.Version
	recs  []Record
}

func (s *script) call(kind, status string) *script {
	if status == server.StepApplied && kind == "optim_step" {
		s.v++
	}
	s.recs = append(s.recs, Record{Model: s.model, StepEntry: server.StepEntry{Seq: s.seq, Kind: kind, Status: status, Version: s.v}})
	s.seq++
	return s
}

func (s *script) steps(n int, save bool) *script {
	for range n {
		s.call("forward_backward", server.StepApplied).call("optim_step", server.StepApplied)
		if save {
			s.call("save_weights", server.StepApplied)
		}
		s.call("save_weights_for_sampler", server.StepApplied)
	}
	return s
}

func (s *script) load(v policy.Version) *script {
	s.v = v
	s.recs = append(s.recs, Record{Model: s.model, StepEntry: server.StepEntry{Seq: s.seq, Kind: "load_weights", Status: server.StepApplied, Version: v}})
	s.seq++
	return s
}

func join(ss ...*script) []Record {
	var out []Record
	for _, s := range ss {
		out = append(out, s.recs...)
	}
	return out
}

func TestAuditAcceptsResumedRuns(t *testing.T) {
	t.Parallel()
	// A: 5 steps saved after each; killed after a 6th optimizer step that
	// was never saved. B resumes from 5 and goes to 9. C resumes from 9
	// (no loss) and goes to 12.
	a := (&script{model: "A"}).steps(5, true)
	a.call("forward_backward", server.StepApplied).call("optim_step", server.StepApplied)
	b := (&script{model: "B"}).load(5).steps(4, true)
	c := (&script{model: "C"}).load(9).steps(3, true)
	rep, err := Audit(join(a, b, c))
	require.NoError(t, err)
	assert.Equal(t, []string{"A", "B", "C"}, rep.Models)
	assert.Equal(t, policy.Version(12), rep.Final)
	assert.Equal(t, 2, rep.Resumes)
	assert.Equal(t, 6+4+3, rep.Applied)
	assert.Equal(t, 1, rep.RolledBack)
	require.Len(t, rep.Lineage, 12)
	for i, s := range rep.Lineage {
		want := "A"
		switch {
		case i >= 9:
			want = "C"
		case i >= 5:
			want = "B"
		}
		assert.Equal(t, want, s.Model, "version %d", s.Version)
	}
}

func TestAuditFindsInconsistencies(t *testing.T) {
	t.Parallel()
	dupSeq := (&script{model: "A"}).steps(2, true)
	dupSeq.recs[3].Seq = dupSeq.recs[2].Seq

	skipped := (&script{model: "A"}).steps(2, true)
	skipped.recs[5].Version++ // the second optimizer step jumps 1 → 3

	twice := (&script{model: "A"}).steps(1, true)
	twice.recs = append(twice.recs, Record{Model: "A", StepEntry: server.StepEntry{Seq: 9, Kind: "optim_step", Status: server.StepApplied, Version: 1}})

	orphan := (&script{model: "B"}).load(3).steps(1, true)

	failedMoves := (&script{model: "A"}).steps(1, true)
	failedMoves.recs = append(failedMoves.recs, Record{Model: "A", StepEntry: server.StepEntry{Seq: 9, Kind: "optim_step", Status: server.StepFailed, Version: 2}})

	outOfOrder := (&script{model: "A"}).steps(2, false)
	outOfOrder.recs[1].Seq, outOfOrder.recs[2].Seq = outOfOrder.recs[2].Seq, outOfOrder.recs[1].Seq

	cases := []struct {
		name string
		recs []Record
		want string
	}{
		{"seq logged twice", dupSeq.recs, "seq_id logged twice"},
		{"version skipped", skipped.recs, "want 2"},
		{"step applied twice", twice.recs, "want 2"},
		{"resume from nothing", orphan.recs, "which no model saved"},
		{"failed call moved the version", failedMoves.recs, "failed call moved"},
		{"seq out of order", outOfOrder.recs, "applied after seq_id"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := Audit(c.recs)
			require.ErrorIs(t, err, ErrAudit)
			assert.Contains(t, err.Error(), c.want)
		})
	}
}

func TestAuditEmpty(t *testing.T) {
	t.Parallel()
	rep, err := Audit(nil)
	require.NoError(t, err)
	assert.Zero(t, rep.Final)
}
