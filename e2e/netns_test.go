package e2e

import (
	"fmt"
	"os"
	"os/exec"
	"strings"
	"sync/atomic"
	"testing"
)

// A test network of Linux network namespaces: one bridge in the test's own
// namespace (itself a host, 10.77.N.1) and one namespace per further host,
// each joined to the bridge by a veth pair (10.77.N.2, .3, …). Processes
// run in a host with `ip netns exec`. The hosts share the file system, as
// machines with a shared mount do, but not loopback or ports. Needs root
// and iproute2; netnsOrSkip says so when they are missing.

// netSeq keeps the networks of parallel tests apart.
var netSeq atomic.Int32

type testNet struct {
	t      *testing.T
	id     string // short, unique per test binary and network
	subnet string // "10.77.N"
	hosts  []string
}

// netnsOrSkip skips t (fails it under CI=true, where CI runs as root with
// iproute2 installed by .ci/run) when network namespaces are not available.
func netnsOrSkip(t *testing.T) {
	t.Helper()
	why := ""
	switch {
	case os.Geteuid() != 0:
		why = "not root"
	default:
		if _, err := exec.LookPath("ip"); err != nil {
			why = "no ip command (Debian: iproute2)"
		} else if out, err := exec.Command("ip", "netns", "list").CombinedOutput(); err != nil {
			why = fmt.Sprintf("ip netns list: %v: %s", err, out)
		}
	}
	if why == "" {
		return
	}
	if os.Getenv("CI") == "true" {
		t.Fatalf("network namespaces unavailable under CI=true: %s", why)
	}
	t.Skipf("network namespaces unavailable (%s): this multi-host test needs root and iproute2", why)
}

// newTestNet makes a bridge and n host namespaces; they are removed when
// t ends.
func newTestNet(t *testing.T, n int) *testNet {
	t.Helper()
	netnsOrSkip(t)
	k := netSeq.Add(1)
	tn := &testNet{t: t, id: fmt.Sprintf("%d%d", os.Getpid()%10000, k), subnet: fmt.Sprintf("10.77.%d", (os.Getpid()+int(k))%200+20)}
	br := "tbr" + tn.id
	t.Cleanup(func() {
		for _, h := range tn.hosts {
			_ = exec.Command("ip", "netns", "del", h).Run()
		}
		_ = exec.Command("ip", "link", "del", br).Run()
	})
	tn.ip("link", "add", br, "type", "bridge")
	tn.ip("addr", "add", tn.subnet+".1/24", "dev", br)
	tn.ip("link", "set", br, "up")
	for i := range n {
		h := fmt.Sprintf("tns%s-%d", tn.id, i)
		veth, peer := fmt.Sprintf("tv%s-%d", tn.id, i), fmt.Sprintf("tp%s-%d", tn.id, i)
		tn.ip("netns", "add", h)
		tn.hosts = append(tn.hosts, h)
		tn.ip("link", "add", veth, "type", "veth", "peer", "name", peer)
		tn.ip("link", "set", veth, "master", br)
		tn.ip("link", "set", veth, "up")
		tn.ip("link", "set", peer, "netns", h)
		tn.ip("-n", h, "addr", "add", tn.addr(i)+"/24", "dev", peer)
		tn.ip("-n", h, "link", "set", peer, "up")
		tn.ip("-n", h, "link", "set", "lo", "up")
	}
	return tn
}

// addr is host i's address (the test's own namespace is 10.77.N.1).
func (tn *testNet) addr(i int) string { return fmt.Sprintf("%s.%d", tn.subnet, i+2) }

// command is name args run in host i.
func (tn *testNet) command(i int, name string, args ...string) *exec.Cmd {
	return exec.Command("ip", append([]string{"netns", "exec", tn.hosts[i], name}, args...)...)
}

func (tn *testNet) ip(args ...string) {
	tn.t.Helper()
	if out, err := exec.Command("ip", args...).CombinedOutput(); err != nil {
		tn.t.Fatalf("ip %s: %v: %s", strings.Join(args, " "), err, out)
	}
}

// The network works: tandem serve in host 0 answers from the test's own
// namespace and from host 1 (this test binary, run there as a client).
func TestTestNet(t *testing.T) {
	t.Parallel()
	tn := newTestNet(t, 2)
	p := startServeIn(t, tn, 0, "sampler", t.TempDir(), apiKey)
	if err := waitHealthy(t.Context(), p.url()); err != nil {
		t.Fatal(err)
	}
	get := tn.command(1, os.Args[0], "-test.run=^TestNetGetHelper$", "-test.count=1")
	get.Env = append(os.Environ(), "TANDEM_NET_GET="+p.url()+"/api/v1/healthz")
	if out, err := get.CombinedOutput(); err != nil || !strings.Contains(string(out), "PASS") {
		t.Fatalf("GET from host 1: %v: %s", err, out)
	}
}

// TestNetGetHelper is TestTestNet's client in another host: it GETs
// $TANDEM_NET_GET and passes on a 200. Without the variable it does nothing.
func TestNetGetHelper(t *testing.T) {
	url := os.Getenv("TANDEM_NET_GET")
	if url == "" {
		t.Skip("a helper of TestTestNet")
	}
	if err := waitHealthy(t.Context(), strings.TrimSuffix(url, "/api/v1/healthz")); err != nil {
		t.Fatal(err)
	}
}
