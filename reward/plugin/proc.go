package plugin

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os/exec"
	"strings"
	"sync"
	"time"
)

// ProcConfig configures a subprocess plugin. Zero values mean defaults.
type ProcConfig struct {
	// Command is the program and its arguments. Required.
	Command []string
	// Dir is the working directory; empty means the current one.
	Dir string
	// Env is appended to the current environment.
	Env []string
	// Timeout bounds each request (default 10 s).
	Timeout time.Duration
	// MaxInFlight bounds the requests sent and not yet answered (default 16).
	MaxInFlight int
}

func (c ProcConfig) withDefaults() ProcConfig {
	if c.Timeout == 0 {
		c.Timeout = 10 * time.Second
	}
	if c.MaxInFlight == 0 {
		c.MaxInFlight = 16
	}
	return c
}

// Validate checks the config.
func (c ProcConfig) Validate() error {
	if len(c.Command) == 0 || c.Command[0] == "" {
		return errors.New("plugin: Command is empty; want a program and its arguments")
	}
	if c.Timeout < 0 {
		return fmt.Errorf("plugin: Timeout %v must not be negative", c.Timeout)
	}
	if c.MaxInFlight < 0 {
		return fmt.Errorf("plugin: MaxInFlight %d must not be negative", c.MaxInFlight)
	}
	return nil
}

// Proc is a reward plugin running as a subprocess speaking JSON lines. It is
// safe for concurrent use. The process starts on the first request and is
// restarted on the request after it dies or hangs.
type Proc struct {
	cfg  ProcConfig
	name string
	sem  chan struct{}

	mu      sync.Mutex
	nextID  uint64
	cur     *process
	retired []*process // earlier incarnations, waited for by Close
	closed  bool
}

// process is one incarnation of the subprocess and its owned goroutines.
type process struct {
	cmd     *exec.Cmd
	stdin   io.WriteCloser
	writeMu sync.Mutex

	mu      sync.Mutex
	pending map[uint64]chan result
	dead    error // set once the process is gone

	stderr *tail
	done   chan struct{} // closed when the reader and waiter have ended
}

type result struct {
	reward float64
	err    *Error
}

// NewProc validates cfg and returns a plugin; the process starts lazily.
func NewProc(cfg ProcConfig) (*Proc, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	cfg = cfg.withDefaults()
	return &Proc{cfg: cfg, name: cfg.Command[0], sem: make(chan struct{}, cfg.MaxInFlight)}, nil
}

// Score sends req (its ID is assigned here) and waits for the reward.
func (p *Proc) Score(ctx context.Context, req Request) (float64, error) {
	select {
	case p.sem <- struct{}{}:
	case <-ctx.Done():
		return 0, context.Cause(ctx)
	}
	defer func() { <-p.sem }()

	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		return 0, ErrClosed
	}
	if p.cur == nil || p.cur.isDead() {
		if p.cur != nil {
			p.cur.kill()
			p.retired = append(p.retired, p.cur)
		}
		pr, err := p.start()
		if err != nil {
			p.mu.Unlock()
			return 0, &Error{Plugin: p.name, Kind: KindCrash, Msg: err.Error()}
		}
		p.cur = pr
	}
	p.nextID++
	req.ID = p.nextID
	pr := p.cur
	p.mu.Unlock()

	ch := make(chan result, 1)
	if err := pr.send(req, ch); err != nil {
		return 0, &Error{Plugin: p.name, ID: req.ID, Kind: KindCrash, Msg: err.Error()}
	}
	timer := time.NewTimer(p.cfg.Timeout)
	defer timer.Stop()
	select {
	case r := <-ch:
		if r.err != nil {
			r.err.Plugin, r.err.ID = p.name, req.ID
			return 0, r.err
		}
		return r.reward, nil
	case <-timer.C:
		// A hung plugin may never answer anyone: kill it so the next request
		// starts a fresh one.
		pr.fail(KindTimeout, fmt.Errorf("killed after request %d timed out", req.ID))
		pr.kill()
		return 0, &Error{Plugin: p.name, ID: req.ID, Kind: KindTimeout, Msg: fmt.Sprintf("no answer within %v", p.cfg.Timeout)}
	case <-ctx.Done():
		pr.forget(req.ID)
		return 0, context.Cause(ctx)
	}
}

// Close stops the process and waits for its goroutines.
func (p *Proc) Close() error {
	p.mu.Lock()
	p.closed = true
	all := p.retired
	if p.cur != nil {
		all = append(all, p.cur)
	}
	p.cur, p.retired = nil, nil
	p.mu.Unlock()
	for _, pr := range all {
		pr.stdin.Close()
		select {
		case <-pr.done:
		case <-time.After(500 * time.Millisecond):
			pr.kill()
			<-pr.done
		}
	}
	return nil
}

func (p *Proc) start() (*process, error) {
	cmd := exec.Command(p.cfg.Command[0], p.cfg.Command[1:]...)
	cmd.Dir = p.cfg.Dir
	if len(p.cfg.Env) > 0 {
		cmd.Env = append(cmd.Environ(), p.cfg.Env...)
	}
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	pr := &process{cmd: cmd, stdin: stdin, pending: map[uint64]chan result{}, stderr: &tail{max: 2048}, done: make(chan struct{})}
	cmd.Stderr = pr.stderr
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start %s: %w", strings.Join(p.cfg.Command, " "), err)
	}
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		pr.read(stdout)
	}()
	go func() {
		wg.Wait()
		err := cmd.Wait()
		msg := "process exited"
		if err != nil {
			msg = "process exited: " + err.Error()
		}
		if s := strings.TrimSpace(pr.stderr.String()); s != "" {
			msg += "; stderr: " + s
		}
		pr.fail(KindCrash, errors.New(msg))
		close(pr.done)
	}()
	return pr, nil
}

func (pr *process) send(req Request, ch chan result) error {
	b, err := json.Marshal(req)
	if err != nil {
		return err
	}
	pr.mu.Lock()
	if pr.dead != nil {
		pr.mu.Unlock()
		return pr.dead
	}
	pr.pending[req.ID] = ch
	pr.mu.Unlock()
	pr.writeMu.Lock()
	_, err = pr.stdin.Write(append(b, '\n'))
	pr.writeMu.Unlock()
	if err != nil {
		pr.forget(req.ID)
		return fmt.Errorf("write request: %w", err)
	}
	return nil
}

// read dispatches answers until stdout closes.
func (pr *process) read(r io.Reader) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 4096), 1<<20)
	for sc.Scan() {
		line := sc.Bytes()
		if len(strings.TrimSpace(string(line))) == 0 {
			continue
		}
		id, reward, remote, err := decodeAnswer(line)
		if id == nil {
			// An answer we cannot route poisons the stream: fail everyone.
			msg := "answer without an id"
			if err != nil {
				msg = err.Error()
			}
			pr.fail(KindGarbage, errors.New(msg))
			pr.kill()
			continue
		}
		pr.mu.Lock()
		ch, ok := pr.pending[*id]
		delete(pr.pending, *id)
		pr.mu.Unlock()
		if !ok {
			continue // answer to a request that timed out or was cancelled
		}
		switch {
		case err != nil:
			ch <- result{err: &Error{Kind: KindGarbage, Msg: err.Error()}}
		case remote != "":
			ch <- result{err: &Error{Kind: KindRemote, Msg: remote}}
		default:
			ch <- result{reward: reward}
		}
	}
	if err := sc.Err(); err != nil {
		pr.fail(KindGarbage, fmt.Errorf("read answers: %w", err))
		pr.kill()
	}
}

// fail marks the process dead and fails every pending request with err.
func (pr *process) fail(kind Kind, err error) {
	pr.mu.Lock()
	if pr.dead == nil {
		pr.dead = err
	}
	pending := pr.pending
	pr.pending = map[uint64]chan result{}
	pr.mu.Unlock()
	for _, ch := range pending {
		ch <- result{err: &Error{Kind: kind, Msg: err.Error()}}
	}
}

func (pr *process) forget(id uint64) {
	pr.mu.Lock()
	delete(pr.pending, id)
	pr.mu.Unlock()
}

func (pr *process) isDead() bool {
	pr.mu.Lock()
	defer pr.mu.Unlock()
	return pr.dead != nil
}

func (pr *process) kill() {
	if pr.cmd.Process != nil {
		_ = pr.cmd.Process.Kill()
	}
}

// tail keeps the last max bytes written to it.
type tail struct {
	mu  sync.Mutex
	max int
	buf []byte
}

func (t *tail) Write(b []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.buf = append(t.buf, b...)
	if len(t.buf) > t.max {
		t.buf = append(t.buf[:0], t.buf[len(t.buf)-t.max:]...)
	}
	return len(b), nil
}

func (t *tail) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return string(t.buf)
}
