package steplog

import (
	"errors"
	"fmt"

	"github.com/tandemrl/tandem/policy"
	"github.com/tandemrl/tandem/server"
)

// ErrAudit is matched by every inconsistency Audit finds.
var ErrAudit = errors.New("steplog: audit failed")

// Report is what Audit found.
type Report struct {
	// Models lists the models in order of their first record.
	Models []string `json:"models"`
	// Calls counts records; Applied counts applied optimizer steps, all
	// models together.
	Calls   int `json:"calls"`
	Applied int `json:"applied_optim_steps"`
	// Resumes counts models that started from a saved state (load_weights
	// as their first state-changing call).
	Resumes int `json:"resumes"`
	// Final is the version of the last model's weights; Lineage the
	// versions that made them, oldest first, with the model that applied
	// each (Lineage[i].Version == i+1).
	Final   policy.Version `json:"final"`
	Lineage []Step         `json:"lineage"`
	// RolledBack counts applied optimizer steps outside the lineage: made
	// after a model's last save by a process that was then killed.
	RolledBack int `json:"rolled_back"`
}

// Step is one optimizer step of a lineage.
type Step struct {
	Model   string         `json:"model"`
	Version policy.Version `json:"version"`
}

// modelLog is the audit state of one model.
type modelLog struct {
	id      string
	lineage []Step // the versions its weights went through, 1..cur
	saves   map[policy.Version][]Step
}

// Audit checks recs (the records of one run, in file order); see the
// package comment for the rules.
func Audit(recs []Record) (Report, error) {
	var (
		rep    Report
		order  []*modelLog
		byID   = map[string]*modelLog{}
		recsOf = map[string][]Record{}
	)
	for _, r := range recs {
		if _, ok := byID[r.Model]; !ok {
			m := &modelLog{id: r.Model, saves: map[policy.Version][]Step{}}
			byID[r.Model] = m
			order = append(order, m)
			rep.Models = append(rep.Models, r.Model)
		}
		recsOf[r.Model] = append(recsOf[r.Model], r)
	}
	rep.Calls = len(recs)
	for i, m := range order {
		if err := m.walk(recsOf[m.id], order[:i], &rep); err != nil {
			return rep, err
		}
	}
	if len(order) == 0 {
		return rep, nil
	}
	last := order[len(order)-1]
	rep.Lineage = last.lineage
	rep.Final = policy.Version(len(last.lineage))
	for i, s := range rep.Lineage {
		if s.Version != policy.Version(i+1) {
			return rep, fmt.Errorf("%w: lineage of %s holds version %d at position %d", ErrAudit, last.id, s.Version, i+1)
		}
	}
	rep.RolledBack = rep.Applied - len(rep.Lineage)
	return rep, nil
}

// walk replays one model's records: seq_ids once and in order, versions
// consecutive, resumes linked to earlier saves.
func (m *modelLog) walk(recs []Record, earlier []*modelLog, rep *Report) error {
	bad := func(r Record, format string, a ...any) error {
		return fmt.Errorf("%w: model %s, seq_id %d (%s): %s", ErrAudit, m.id, r.Seq, r.Kind, fmt.Sprintf(format, a...))
	}
	seen := map[int64]bool{}
	last := int64(-1)
	cur := policy.Version(0)
	changed := false // a state-changing call was applied
	for _, r := range recs {
		if r.Seq >= 0 {
			if seen[r.Seq] {
				return bad(r, "seq_id logged twice")
			}
			seen[r.Seq] = true
			if r.Status != server.StepTimedOut {
				if r.Seq <= last {
					return bad(r, "applied after seq_id %d", last)
				}
				last = r.Seq
			}
		}
		if r.Status != server.StepApplied {
			if r.Version != cur {
				return bad(r, "a %s call moved the version from %d to %d", r.Status, cur, r.Version)
			}
			continue
		}
		switch r.Kind {
		case "optim_step":
			if r.Version != cur+1 {
				return bad(r, "optimizer step from version %d to %d; want %d", cur, r.Version, cur+1)
			}
			cur++
			m.lineage = append(m.lineage, Step{Model: m.id, Version: cur})
			rep.Applied++
			changed = true
		case "load_weights":
			src, ok := savedBefore(earlier, m, r.Version)
			if !ok {
				return bad(r, "loads version %d, which no model saved before", r.Version)
			}
			if !changed {
				rep.Resumes++
			}
			cur = r.Version
			m.lineage = src
			changed = true
		case "save_weights":
			if r.Version != cur {
				return bad(r, "saved version %d while at %d", r.Version, cur)
			}
			m.saves[cur] = append([]Step(nil), m.lineage...)
		default:
			if r.Version != cur {
				return bad(r, "moved the version from %d to %d", cur, r.Version)
			}
		}
	}
	return nil
}

// savedBefore finds the lineage of the newest save of version v among the
// earlier models and m itself.
func savedBefore(earlier []*modelLog, m *modelLog, v policy.Version) ([]Step, bool) {
	if l, ok := m.saves[v]; ok {
		return append([]Step(nil), l...), true
	}
	for i := len(earlier) - 1; i >= 0; i-- {
		if l, ok := earlier[i].saves[v]; ok {
			return append([]Step(nil), l...), true
		}
	}
	if v == 0 {
		return nil, true // a fresh adapter needs no save
	}
	return nil, false
}
