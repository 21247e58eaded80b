package hforacle

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
)

// OneThread is the environment that holds Hugging Face's tokenizers to one
// thread (encodeBatch included); StartNode sets it.
const OneThread = "RAYON_NUM_THREADS=1 TOKENIZERS_PARALLELISM=false"

// Process is a child process that reads one JSON request per stdin line and
// writes one JSON answer per stdout line, in order. Call is safe for
// concurrent use (one request at a time); Send, Flush and Recv are for one
// sending and one receiving goroutine that do not mix with Call.
type Process struct {
	name   string
	mu     sync.Mutex // held by Call
	cmd    *exec.Cmd
	stdin  io.WriteCloser
	w      *bufio.Writer
	enc    *json.Encoder
	dec    *json.Decoder
	stderr syncBuffer
	killed atomic.Bool
	close  sync.Once
	err    error // Close's
}

// StartNode runs `node script hfDir modelDir` (the oracle scripts' usage)
// with OneThread.
func StartNode(script, hfDir, modelDir string) (*Process, error) {
	return Start(strings.Fields(OneThread), "node", script, hfDir, modelDir)
}

// Start runs name with args, env added to this process's environment.
func Start(env []string, name string, args ...string) (*Process, error) {
	cmd := exec.Command(name, args...)
	if len(env) > 0 {
		cmd.Env = append(os.Environ(), env...)
	}
	label := name
	if len(args) > 0 {
		label += " " + filepath.Base(args[0])
	}
	p := &Process{name: label, cmd: cmd}
	var err error
	if p.stdin, err = cmd.StdinPipe(); err != nil {
		return nil, err
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	cmd.Stderr = &p.stderr
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start %s: %w", label, err)
	}
	p.w = bufio.NewWriterSize(p.stdin, 1<<16)
	p.enc = json.NewEncoder(p.w)
	p.enc.SetEscapeHTML(false)
	p.dec = json.NewDecoder(bufio.NewReaderSize(stdout, 1<<16))
	return p, nil
}

// Call sends req and decodes its answer into ans.
func (p *Process) Call(req, ans any) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if err := p.Send(req); err != nil {
		return err
	}
	if err := p.Flush(); err != nil {
		return err
	}
	return p.Recv(ans)
}

// Send writes one request line (buffered: Flush sends it on).
func (p *Process) Send(req any) error {
	if err := p.enc.Encode(req); err != nil {
		return p.failed(err)
	}
	return nil
}

// Flush sends on what Send buffered.
func (p *Process) Flush() error {
	if err := p.w.Flush(); err != nil {
		return p.failed(err)
	}
	return nil
}

// Recv decodes the next answer line into ans.
func (p *Process) Recv(ans any) error {
	if err := p.dec.Decode(ans); err != nil {
		return p.failed(err)
	}
	return nil
}

func (p *Process) failed(err error) error {
	return fmt.Errorf("%s pipe: %w; stderr: %s", p.name, err, strings.TrimSpace(p.stderr.String()))
}

// Stderr is what the process has written to its stderr so far.
func (p *Process) Stderr() string { return p.stderr.String() }

// Kill ends the process at once and closes its stdin, which unblocks a
// goroutine stuck in Send or Flush; Close then only waits.
func (p *Process) Kill() {
	p.killed.Store(true)
	_ = p.cmd.Process.Kill()
	_ = p.stdin.Close()
}

// Close ends the input (the scripts exit at its end) and waits for the
// process; later calls return the same.
func (p *Process) Close() error {
	p.close.Do(func() {
		var errs []error
		if !p.killed.Load() {
			errs = append(errs, p.w.Flush(), p.stdin.Close())
		}
		p.err = errors.Join(append(errs, p.cmd.Wait())...)
	})
	return p.err
}

// syncBuffer is a bytes.Buffer that os/exec's copying goroutine writes
// while an error message reads it.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.String()
}
