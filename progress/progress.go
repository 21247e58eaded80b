// Package progress shows a long run's progress: on a terminal, one status
// line rewritten in place (step, reward, staleness, tokens/s, ETA); anywhere
// else, one plain log line per update, so logs and CI output stay readable.
//
// A Display is safe for concurrent use; Update never blocks on anything but
// the writer.
package progress

import (
	"fmt"
	"io"
	"os"
	"strings"
	"sync"
	"time"

	"golang.org/x/term"
)

// Status is what one update shows.
type Status struct {
	Step, Total  int
	Reward       float64
	Accuracy     *float64
	MaxStaleness int
	MeanStale    float64
	TokensPerSec float64
	Dropped      int
	Note         string
}

// Display writes progress to a writer.
type Display struct {
	mu      sync.Mutex
	w       io.Writer
	tty     bool
	start   time.Time
	now     func() time.Time
	lastLen int
}

// New returns a Display writing to w. It redraws one line in place only when
// w is a terminal.
func New(w io.Writer) *Display {
	tty := false
	if f, ok := w.(*os.File); ok {
		tty = term.IsTerminal(int(f.Fd()))
	}
	return &Display{w: w, tty: tty, start: time.Now(), now: time.Now}
}

// Interactive reports whether the display redraws a terminal line.
func (d *Display) Interactive() bool { return d.tty }

// Update shows s.
func (d *Display) Update(s Status) {
	d.mu.Lock()
	defer d.mu.Unlock()
	line := d.format(s)
	if d.tty {
		pad := ""
		if n := d.lastLen - len(line); n > 0 {
			pad = strings.Repeat(" ", n)
		}
		fmt.Fprintf(d.w, "\r%s%s", line, pad)
		d.lastLen = len(line)
		return
	}
	fmt.Fprintln(d.w, line)
}

// Println prints a message on its own line, keeping the status line intact
// on a terminal.
func (d *Display) Println(msg string) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.tty && d.lastLen > 0 {
		fmt.Fprintf(d.w, "\r%s\r", strings.Repeat(" ", d.lastLen))
		d.lastLen = 0
	}
	fmt.Fprintln(d.w, msg)
}

// Done ends the status line on a terminal.
func (d *Display) Done() {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.tty && d.lastLen > 0 {
		fmt.Fprintln(d.w)
		d.lastLen = 0
	}
}

func (d *Display) format(s Status) string {
	var b strings.Builder
	elapsed := d.now().Sub(d.start)
	if s.Total > 0 {
		fmt.Fprintf(&b, "step %d/%d", s.Step, s.Total)
	} else {
		fmt.Fprintf(&b, "step %d", s.Step)
	}
	fmt.Fprintf(&b, "  reward %.3f", s.Reward)
	if s.Accuracy != nil {
		fmt.Fprintf(&b, "  acc %.3f", *s.Accuracy)
	}
	fmt.Fprintf(&b, "  staleness mean %.2f max %d", s.MeanStale, s.MaxStaleness)
	if s.Dropped > 0 {
		fmt.Fprintf(&b, "  dropped %d", s.Dropped)
	}
	fmt.Fprintf(&b, "  %s tok/s", human(s.TokensPerSec))
	fmt.Fprintf(&b, "  elapsed %s", round(elapsed))
	if s.Total > 0 && s.Step > 0 && s.Step < s.Total {
		eta := time.Duration(float64(elapsed) / float64(s.Step) * float64(s.Total-s.Step))
		fmt.Fprintf(&b, "  ETA %s", round(eta))
	}
	if s.Note != "" {
		b.WriteString("  " + s.Note)
	}
	return b.String()
}

func human(x float64) string {
	switch {
	case x >= 1e6:
		return fmt.Sprintf("%.1fM", x/1e6)
	case x >= 1e3:
		return fmt.Sprintf("%.1fk", x/1e3)
	default:
		return fmt.Sprintf("%.0f", x)
	}
}

func round(d time.Duration) time.Duration {
	if d > time.Minute {
		return d.Round(time.Second)
	}
	return d.Round(100 * time.Millisecond)
}
