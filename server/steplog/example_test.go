package steplog_test

import (
	"fmt"

	"github.com/tandemrl/tandem/policy"
	"github.com/tandemrl/tandem/server"
	"github.com/tandemrl/tandem/server/steplog"
)

// A trainer process applied two steps (saving after each) and a third it
// never saved before it was killed; the restarted process resumed from
// version 2 and redid the third step.
func ExampleAudit() {
	entry := func(model string, seq int64, kind string, v int64) steplog.Record {
		return steplog.Record{Model: model, StepEntry: server.StepEntry{Seq: seq, Kind: kind, Status: server.StepApplied, Version: policy.Version(v)}}
	}
	recs := []steplog.Record{
		entry("A", 1, "forward_backward", 0), entry("A", 2, "optim_step", 1), entry("A", 3, "save_weights", 1),
		entry("A", 4, "forward_backward", 1), entry("A", 5, "optim_step", 2), entry("A", 6, "save_weights", 2),
		entry("A", 7, "forward_backward", 2), entry("A", 8, "optim_step", 3),
		entry("B", 1, "load_weights", 2),
		entry("B", 2, "forward_backward", 2), entry("B", 3, "optim_step", 3), entry("B", 4, "save_weights", 3),
	}
	rep, err := steplog.Audit(recs)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Printf("final version %d, resumes %d, applied %d, rolled back %d\n", rep.Final, rep.Resumes, rep.Applied, rep.RolledBack)
	for _, s := range rep.Lineage {
		fmt.Printf("v%d by %s\n", s.Version, s.Model)
	}
	// Output:
	// final version 3, resumes 1, applied 4, rolled back 1
	// v1 by A
	// v2 by A
	// v3 by B
}
