package ui

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"github.com/tandemrl/tandem/runlog"
)

// maxTailRead bounds the bytes one poll of an event stream reads; a file
// that grew by more is caught up over several polls.
const maxTailRead = 4 << 20

// tail follows a growing metrics.jsonl from a byte offset. It is a plain
// single-threaded type: poll reads what was appended since the last call.
type tail struct {
	path string
	m    metrics // offset and line count carry over between polls
	buf  []byte  // an unfinished last line, carried to the next poll
}

func newTail(path string, offset int64, lines int) *tail {
	return &tail{path: path, m: metrics{offset: offset, lines: lines}}
}

// errShrunk reports a metrics.jsonl now shorter than the stream's offset
// (the file was replaced); the client reloads.
var errShrunk = errors.New("ui: metrics.jsonl shrank")

// poll returns the complete lines appended since the last poll, decoded,
// and the bad ones among them. A missing file is no news.
func (t *tail) poll() ([]step, []BadLine, error) {
	f, err := os.Open(t.path)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil, nil
	}
	if err != nil {
		return nil, nil, err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, nil, err
	}
	at := t.m.offset + int64(len(t.buf))
	if st.Size() < at {
		return nil, nil, errShrunk
	}
	if st.Size() == at {
		return nil, nil, nil
	}
	n := min(st.Size()-at, maxTailRead)
	chunk := make([]byte, n)
	if _, err := f.ReadAt(chunk, at); err != nil && !errors.Is(err, io.EOF) {
		return nil, nil, err
	}
	t.m.steps, t.m.bad = t.m.steps[:0], t.m.bad[:0]
	rest := t.m.consume(append(t.buf, chunk...), false)
	t.buf = append(t.buf[:0:0], rest...)
	return t.m.steps, t.m.bad, nil
}

// serveEvents streams a run's new metrics lines as server-sent events:
// "metrics" (data: the decoded line as JSON, id: the byte offset after it),
// "bad" (a BadLine), and "reset" when the file was replaced. The stream
// starts at ?offset= (default: the file's current end) and ends when the
// client goes. The handler's own goroutine polls the file's size every
// PollInterval; it starts no other.
func (h *Handler) serveEvents(w http.ResponseWriter, r *http.Request) {
	name := r.PathValue("run")
	dir, err := runDir(h.root, name)
	if err != nil {
		h.fail(w, err)
		return
	}
	path := filepath.Join(dir, runlog.MetricsFile)
	offset, lines := int64(-1), 0
	if s := r.URL.Query().Get("offset"); s != "" {
		if offset, err = strconv.ParseInt(s, 10, 64); err != nil || offset < 0 {
			http.Error(w, fmt.Sprintf("offset %q: want a byte offset ≥ 0", s), http.StatusBadRequest)
			return
		}
	}
	if s := r.Header.Get("Last-Event-ID"); s != "" {
		// A reconnecting EventSource resumes after the last event it got.
		if id, err := strconv.ParseInt(s, 10, 64); err == nil && id >= 0 {
			offset = id
		}
	}
	if s := r.URL.Query().Get("lines"); s != "" {
		lines, _ = strconv.Atoi(s)
	}
	if offset < 0 {
		offset = 0
		if st, err := os.Stat(path); err == nil {
			offset = st.Size()
		}
	}
	flusher, ok := w.(http.Flusher)
	if !ok {
		http.Error(w, "streaming unsupported", http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-cache")
	fmt.Fprintf(w, ": tandem ui: run %s from byte %d\n\n", name, offset)
	flusher.Flush()

	t := newTail(path, offset, lines)
	tick := time.NewTicker(h.opts.PollInterval)
	defer tick.Stop()
	for {
		steps, bad, err := t.poll()
		switch {
		case errors.Is(err, errShrunk):
			fmt.Fprint(w, "event: reset\ndata: {}\n\n")
			flusher.Flush()
			return
		case err != nil:
			fmt.Fprintf(w, "event: error\ndata: %q\n\n", err.Error())
			flusher.Flush()
			return
		}
		for i := range steps {
			writeEvent(w, "metrics", t.m.offset, liveRecord(&steps[i]))
		}
		for _, b := range bad {
			writeEvent(w, "bad", t.m.offset, b)
		}
		if len(steps)+len(bad) > 0 {
			flusher.Flush()
		}
		select {
		case <-r.Context().Done():
			return
		case <-tick.C:
		}
	}
}

// liveRecord is a decoded line as the live script reads it: the line's
// fields plus the derived mean_staleness.
func liveRecord(s *step) map[string]any {
	stale := map[string]int{}
	for k, n := range s.Staleness {
		stale[strconv.Itoa(k)] = n
	}
	out := map[string]any{
		"step": s.Step, "version": s.Version, "seconds": s.Seconds, "reward_mean": s.Reward,
		"staleness": stale, "max_staleness": s.MaxStaleness, "mean_staleness": s.meanStaleness(),
		"dropped": s.Dropped, "requeued": s.Requeued, "filtered": s.Filtered, "logprob_gap": s.LogprobGap,
		"samples_per_s": s.SamplesPerSec, "tokens_per_s": s.TokensPerSec, "served_version": s.ServedVersion,
	}
	if s.Accuracy != nil {
		out["accuracy"] = *s.Accuracy
	}
	return out
}

func writeEvent(w io.Writer, event string, id int64, v any) {
	b, _ := json.Marshal(v) // maps and BadLines of plain values always encode
	fmt.Fprintf(w, "event: %s\nid: %d\ndata: %s\n\n", event, id, b)
}
