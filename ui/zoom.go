package ui

import (
	"fmt"
	"strconv"
)

// stepRange is a run page's zoom: the steps from From to To, inclusive,
// drawn at full resolution (up to MaxPoints per series). The zero value,
// and an unset bound, mean no limit.
type stepRange struct {
	From, To *int
}

// parseRange reads the ?from= and ?to= of a run page.
func parseRange(from, to string) (stepRange, error) {
	var r stepRange
	for _, f := range []struct {
		name, s string
		dst     **int
	}{{"from", from, &r.From}, {"to", to, &r.To}} {
		if f.s == "" {
			continue
		}
		v, err := strconv.Atoi(f.s)
		if err != nil || v < 0 {
			return r, fmt.Errorf("%s %q: want a step number ≥ 0", f.name, f.s)
		}
		*f.dst = &v
	}
	if r.From != nil && r.To != nil && *r.From > *r.To {
		return r, fmt.Errorf("from %d is after to %d", *r.From, *r.To)
	}
	return r, nil
}

// Set reports whether either bound is set.
func (r stepRange) Set() bool { return r.From != nil || r.To != nil }

func (r stepRange) has(step int) bool {
	return (r.From == nil || step >= *r.From) && (r.To == nil || step <= *r.To)
}

// steps returns the steps in the range (st itself when the range is
// unset; a new slice otherwise).
func (r stepRange) steps(st []step) []step {
	if !r.Set() {
		return st
	}
	var out []step
	for i := range st {
		if r.has(st[i].Step) {
			out = append(out, st[i])
		}
	}
	return out
}

// evals returns the evaluations in the range (an evaluation's step counts
// steps done, so step s's evaluation is at s+1).
func (r stepRange) evals(ev []evalPoint) []evalPoint {
	if !r.Set() {
		return ev
	}
	var out []evalPoint
	for _, e := range ev {
		if r.has(e.Step - 1) {
			out = append(out, e)
		}
	}
	return out
}

// spans returns the replica spans in the range.
func (r stepRange) spans(served map[string][]replicaSpan) map[string][]replicaSpan {
	if !r.Set() || served == nil {
		return served
	}
	out := map[string][]replicaSpan{}
	for k, sp := range served {
		for _, s := range sp {
			if r.has(s.Step) {
				out[k] = append(out[k], s)
			}
		}
	}
	return out
}

// Value returns the bound for a form field ("" when unset).
func (r stepRange) Value(which string) string {
	p := r.From
	if which == "to" {
		p = r.To
	}
	if p == nil {
		return ""
	}
	return strconv.Itoa(*p)
}
