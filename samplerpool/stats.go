package samplerpool

import "github.com/tandemrl/tandem/policy"

// ReplicaStats is one replica's counters at one moment.
type ReplicaStats struct {
	Name string `json:"name"`
	// Healthy is false while the replica is ejected.
	Healthy bool `json:"healthy"`
	// Stale: its last Load of the newest ref failed; it still serves
	// Served and the health loop re-loads it.
	Stale bool `json:"stale,omitempty"`
	// Outstanding is the number of calls in flight on it now.
	Outstanding int `json:"outstanding"`
	// Calls counts the calls routed to it; Failures those that failed
	// with a transient error, Errors those that failed otherwise.
	Calls    int64 `json:"calls"`
	Failures int64 `json:"failures"`
	Errors   int64 `json:"errors"`
	// RetriedAway counts calls that failed here and moved to another
	// replica.
	RetriedAway int64 `json:"retried_away"`
	// Served is the version it serves (HasServed false before any Load).
	Served    policy.Version `json:"served"`
	HasServed bool           `json:"has_served"`
	// Ejections and Readmissions count its trips out of and back into
	// the pool; ProbeFailures and LoadFailures the failed probes and
	// loads.
	Ejections     int64 `json:"ejections"`
	Readmissions  int64 `json:"readmissions"`
	ProbeFailures int64 `json:"probe_failures"`
	LoadFailures  int64 `json:"load_failures"`
	// GapMean is the mean |sampler − trainer| log-prob gap recorded with
	// RecordGap, over GapCount records.
	GapMean  float64 `json:"gap_mean"`
	GapCount int64   `json:"gap_count"`
}

// Stats is the pool's counters at one moment: one entry per replica, in
// the order given to New, and their totals.
type Stats struct {
	Replicas []ReplicaStats `json:"replicas"`
	// Healthy is the number of replicas not ejected.
	Healthy     int   `json:"healthy"`
	Outstanding int   `json:"outstanding"`
	Calls       int64 `json:"calls"`
	Failures    int64 `json:"failures"`
	Errors      int64 `json:"errors"`
	// Retries counts calls moved to another replica after a transient
	// failure.
	Retries      int64 `json:"retries"`
	Ejections    int64 `json:"ejections"`
	Readmissions int64 `json:"readmissions"`
	// Newest is the newest version a healthy replica serves (HasNewest
	// false when none does); Target the version of the newest ref given
	// to Load.
	Newest    policy.Version `json:"newest"`
	HasNewest bool           `json:"has_newest"`
	Target    policy.Version `json:"target"`
	HasTarget bool           `json:"has_target"`
}

// stats copies the counters.
func (c *core) stats() Stats {
	s := Stats{Replicas: make([]ReplicaStats, len(c.reps))}
	for i := range c.reps {
		r := &c.reps[i]
		rs := ReplicaStats{
			Name: r.name, Healthy: !r.ejected, Stale: r.stale && c.behind(r), Outstanding: r.outstanding,
			Calls: r.calls, Failures: r.failures, Errors: r.errors, RetriedAway: r.movedAway,
			Served: r.served, HasServed: r.hasServed,
			Ejections: r.ejections, Readmissions: r.readmissions,
			ProbeFailures: r.probeFailures, LoadFailures: r.loadFailures,
			GapCount: r.gapN,
		}
		if r.gapN > 0 {
			rs.GapMean = r.gapSum / float64(r.gapN)
		}
		s.Replicas[i] = rs
		if rs.Healthy {
			s.Healthy++
		}
		s.Outstanding += rs.Outstanding
		s.Calls += rs.Calls
		s.Failures += rs.Failures
		s.Errors += rs.Errors
		s.Retries += rs.RetriedAway
		s.Ejections += rs.Ejections
		s.Readmissions += rs.Readmissions
	}
	s.Newest, s.HasNewest = c.newest()
	s.Target, s.HasTarget = c.target.Version, c.hasTarget
	return s
}

// Version returns the newest version a healthy replica serves.
func (p *Pool) Version() (policy.Version, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.core.newest()
}

// Stats returns a snapshot of the counters; the caller owns it.
func (p *Pool) Stats() Stats {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.core.stats()
}

// RecordGap records one |sampler − trainer| log-prob gap of the named
// replica (its absolute value; NaN and unknown names are ignored). Stats
// reports the mean per replica.
func (p *Pool) RecordGap(replica string, gap float64) {
	i, ok := p.byName[replica]
	if !ok {
		return
	}
	p.mu.Lock()
	p.core.recordGap(i, gap)
	p.mu.Unlock()
}
