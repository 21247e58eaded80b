// Package runlog writes the folder every run leaves behind: the resolved
// config (config.json), one JSON object per step (metrics.jsonl) and plots a
// person can look at (reward and accuracy per step, the staleness histogram,
// throughput), rendered with gonum/plot as SVG and PNG.
//
// A Run is safe for concurrent use. Log appends a line and flushes it, so a
// crash loses at most the step being written.
package runlog
