package e2e

import (
	"bufio"
	"context"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
)

// listening is the line `tandem serve` prints once it accepts calls
// (cmd/tandem.ListeningPrefix).
const listening = "tandem serve: listening on "

var build struct {
	once sync.Once
	dir  string
	bin  string
	err  error
}

// tandemBinary builds the tandem command once per test binary.
func tandemBinary(t *testing.T) string {
	t.Helper()
	build.once.Do(func() {
		build.dir, build.err = os.MkdirTemp("", "tandem-e2e-")
		if build.err != nil {
			return
		}
		build.bin = filepath.Join(build.dir, "tandem")
		cmd := exec.Command("go", "build", "-o", build.bin, "github.com/tandemrl/tandem/cmd/tandem")
		out, err := cmd.CombinedOutput()
		if err != nil {
			build.err = fmt.Errorf("go build: %v\n%s", err, out)
		}
	})
	require.NoError(t, build.err)
	return build.bin
}

func TestMain(m *testing.M) {
	code := m.Run()
	if build.dir != "" {
		os.RemoveAll(build.dir)
	}
	if code == 0 {
		// Every goroutine the clients, loops and helpers started has ended
		// (idle keep-alive connections of the shared HTTP transport aside).
		if err := goleak.Find(goleak.IgnoreTopFunction("net/http.(*persistConn).readLoop"), goleak.IgnoreTopFunction("net/http.(*persistConn).writeLoop"), goleak.IgnoreTopFunction("internal/poll.runtime_pollWait")); err != nil {
			fmt.Fprintln(os.Stderr, "goleak:", err)
			code = 1
		}
	}
	os.Exit(code)
}

// recoverForever is the resilient clients' RecoverFor in these tests: a
// bound no recovery reaches (longer than go test's own -timeout). The tests
// check that a client recovers, not how fast a loaded machine lets it.
const recoverForever = time.Hour

// proc is one `tandem serve` process, restartable on the same address.
type proc struct {
	t      *testing.T
	net    *testNet // nil: this namespace; else the process runs in host
	host   int
	bin    string
	role   string
	store  string
	key    string
	addr   string // host:port, fixed after the first start
	logDir string
	extra  []string // more serve flags

	cmd     *exec.Cmd
	exited  chan struct{}
	waitErr error // the exit status, once exited is closed
	starts  int
}

func startServe(t *testing.T, role, store, key string, extra ...string) *proc {
	t.Helper()
	p := &proc{t: t, bin: tandemBinary(t), role: role, store: store, key: key, addr: "127.0.0.1:0", logDir: t.TempDir(), extra: extra}
	p.start()
	t.Cleanup(p.stop)
	return p
}

func (p *proc) url() string { return "http://" + p.addr }

// startServeIn starts tandem serve in host i of tn, listening on its
// address (port picked by the kernel, kept across restarts).
func startServeIn(t *testing.T, tn *testNet, i int, role, store, key string, extra ...string) *proc {
	t.Helper()
	p := &proc{t: t, net: tn, host: i, bin: tandemBinary(t), role: role, store: store, key: key,
		addr: tn.addr(i) + ":0", logDir: t.TempDir(), extra: append([]string{"-allow-remote"}, extra...)}
	p.start()
	t.Cleanup(p.stop)
	return p
}

// start runs the process and waits for its "listening on" line.
func (p *proc) start() {
	p.t.Helper()
	require.NoError(p.t, p.tryStart())
}

// tryStart is start returning its error (for goroutines other than the
// test's).
func (p *proc) tryStart() error {
	p.starts++
	logf, err := os.Create(filepath.Join(p.logDir, fmt.Sprintf("%s-%d.log", p.role, p.starts)))
	if err != nil {
		return err
	}
	args := append([]string{"serve", "-listen", p.addr, "-role", p.role, "-store", p.store, "-threads", "1"}, p.extra...)
	cmd := exec.Command(p.bin, args...)
	if p.net != nil {
		cmd = p.net.command(p.host, p.bin, args...)
	}
	cmd.Env = append(os.Environ(), "TANDEM_API_KEY="+p.key)
	cmd.Stderr = logf
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		logf.Close()
		return err
	}
	if err := cmd.Start(); err != nil {
		logf.Close()
		return err
	}
	exited := make(chan struct{})
	lines := make(chan string, 1)
	go func() {
		defer close(exited)
		sc := bufio.NewScanner(stdout)
		first := true
		for sc.Scan() {
			if first {
				lines <- sc.Text()
				first = false
			}
		}
		p.waitErr = cmd.Wait()
		logf.Close()
	}()
	// No deadline of its own: a process that neither listens nor exits is
	// reported by go test's -timeout, however slow the machine otherwise is.
	select {
	case line := <-lines:
		if !strings.HasPrefix(line, listening) {
			return fmt.Errorf("tandem serve --role %s: unexpected first line %q", p.role, line)
		}
		p.addr = strings.Fields(strings.TrimPrefix(line, listening))[0]
	case <-exited:
		b, _ := os.ReadFile(logf.Name())
		return fmt.Errorf("tandem serve --role %s exited before listening:\n%s", p.role, b)
	}
	p.cmd, p.exited = cmd, exited
	return nil
}

// kill sends SIGKILL and waits for the process to be gone.
func (p *proc) kill() {
	p.t.Helper()
	require.NoError(p.t, p.cmd.Process.Signal(syscall.SIGKILL))
	<-p.exited
}

// killAndRestart SIGKILLs the process and starts it again on the same
// address, for a goroutine other than the test's: it returns the error
// instead of failing the test.
func (p *proc) killAndRestart() error {
	if err := p.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		return fmt.Errorf("kill %s: %w", p.role, err)
	}
	<-p.exited
	return p.tryStart()
}

// stop ends the process with SIGTERM (SIGKILL after 15 s).
func (p *proc) stop() {
	if p.cmd == nil {
		return
	}
	select {
	case <-p.exited:
		return
	default:
	}
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.exited:
	case <-time.After(15 * time.Second):
		_ = p.cmd.Process.Kill()
		<-p.exited
	}
}

// waitHealthy polls healthz until it answers or ctx ends.
func waitHealthy(ctx context.Context, url string) error {
	for {
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, url+"/api/v1/healthz", nil)
		if resp, err := http.DefaultClient.Do(req); err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(50 * time.Millisecond):
		}
	}
}
