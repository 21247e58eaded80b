package steplog

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"sync"
	"time"

	"github.com/tandemrl/tandem/server"
)

// Record is one line of a step log file.
type Record struct {
	Time  time.Time `json:"time"`
	PID   int       `json:"pid"`
	Model string    `json:"model"`
	server.StepEntry
}

// MaxLine bounds one line of a step log file.
const MaxLine = 64 << 10

// Writer appends records to a file. It is safe for concurrent use. Append
// never blocks on anything but the write itself and never fails: the first
// write error is kept and returned by Err and Close (a server's OnStep hook
// cannot return one).
type Writer struct {
	mu  sync.Mutex
	f   *os.File
	pid int
	now func() time.Time
	err error
}

// Open opens (creating it if needed) the step log at path for appending.
func Open(path string) (*Writer, error) {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
	if err != nil {
		return nil, fmt.Errorf("steplog: %w", err)
	}
	return &Writer{f: f, pid: os.Getpid(), now: time.Now}, nil
}

// Append writes the entry of model as one line, in a single write so that
// lines of processes sharing the file never interleave. It has the
// signature of server.Options.OnStep. The line reaches the operating
// system before Append returns (it survives the process being killed; use
// Sync for power loss).
func (w *Writer) Append(model string, e server.StepEntry) {
	b, err := json.Marshal(Record{Time: w.now().UTC(), PID: w.pid, Model: model, StepEntry: e})
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.err != nil {
		return
	}
	if err == nil {
		_, err = w.f.Write(append(b, '\n'))
	}
	if err != nil {
		w.err = fmt.Errorf("steplog: append: %w", err)
	}
}

// Sync flushes the file to stable storage.
func (w *Writer) Sync() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.f.Sync()
}

// Err returns the first write error, if any.
func (w *Writer) Err() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.err
}

// Close syncs and closes the file and returns the first error seen.
func (w *Writer) Close() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	return errors.Join(w.err, w.f.Sync(), w.f.Close())
}

// ErrSyntax is matched by a malformed line.
var ErrSyntax = errors.New("steplog: malformed line")

// Read parses a step log. A last line without its newline (a process
// killed mid-write) is ignored; any other malformed line is an error
// naming its number.
func Read(r io.Reader) ([]Record, error) {
	br := bufio.NewReaderSize(r, 4096)
	var out []Record
	for n := 1; ; n++ {
		line, err := readLine(br)
		if errors.Is(err, io.EOF) {
			return out, nil
		}
		if err != nil {
			return out, fmt.Errorf("steplog: line %d: %w", n, err)
		}
		if len(bytes.TrimSpace(line)) == 0 {
			continue
		}
		var rec Record
		if err := json.Unmarshal(line, &rec); err != nil {
			return out, fmt.Errorf("%w %d: %v", ErrSyntax, n, err)
		}
		if rec.Model == "" || rec.Kind == "" {
			return out, fmt.Errorf("%w %d: want fields model and kind", ErrSyntax, n)
		}
		out = append(out, rec)
	}
}

// readLine returns one complete line, io.EOF at the end, and io.EOF also
// for a final fragment without a newline.
func readLine(br *bufio.Reader) ([]byte, error) {
	var line []byte
	for {
		chunk, err := br.ReadSlice('\n')
		line = append(line, chunk...)
		if len(line) > MaxLine {
			return nil, fmt.Errorf("%w: longer than %d bytes", ErrSyntax, MaxLine)
		}
		switch {
		case err == nil:
			return line, nil
		case errors.Is(err, bufio.ErrBufferFull):
			continue
		default:
			return nil, err // io.EOF drops a torn fragment
		}
	}
}

// ReadFile reads the step log at path.
func ReadFile(path string) ([]Record, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("steplog: %w", err)
	}
	defer f.Close()
	return Read(f)
}
