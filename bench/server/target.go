package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/tandemrl/tandem/basemodel"
	"github.com/tandemrl/tandem/checkpoint"
	"github.com/tandemrl/tandem/engine"
	"github.com/tandemrl/tandem/server"
	"github.com/tandemrl/tandem/server/localbackend"
	"github.com/tandemrl/tandem/server/openai"
)

// listening starts the line tandem serve prints (cmd/tandem.ListeningPrefix).
const listening = "tandem serve: listening on "

// startTarget starts the server under test and returns its URL and a
// function that stops it and removes its files.
func startTarget(ctx context.Context, cfg config, out io.Writer) (string, func(), error) {
	dir, err := os.MkdirTemp("", "tandem-bench-server-")
	if err != nil {
		return "", nil, err
	}
	cleanup := func() { os.RemoveAll(dir) }
	var (
		url  string
		stop func()
	)
	if cfg.inprocess {
		url, stop, err = startInProcess(dir, cfg)
	} else {
		url, stop, err = startProcess(ctx, dir, cfg, out)
	}
	if err != nil {
		cleanup()
		return "", nil, err
	}
	return url, func() { stop(); cleanup() }, nil
}

func startInProcess(dir string, cfg config) (string, func(), error) {
	base, err := basemodel.Load()
	if err != nil {
		return "", nil, err
	}
	st, err := checkpoint.Open(dir)
	if err != nil {
		return "", nil, err
	}
	be, err := localbackend.New(localbackend.Options{Bases: map[string]*engine.Model[float32]{basemodel.Name: base}, Store: st, SamplerThreads: cfg.threads})
	if err != nil {
		return "", nil, err
	}
	srv, err := server.New(server.Config{Role: server.RoleSampler, APIKeys: []string{apiKey}, Models: be.Models()}, server.Options{Backend: be})
	if err != nil {
		return "", nil, err
	}
	tok, err := basemodel.Tokenizer()
	if err != nil {
		return "", nil, err
	}
	oai, err := openai.New(openai.Options{
		Models:     []openai.Model{{Name: basemodel.Name, MaxModelLen: base.Config.Context, VocabSize: base.Config.Vocab, Tokenizer: tok, Renderer: "role_colon"}},
		NewSampler: be.NewSampler, CheckKey: openai.KeyChecker(apiKey), MaxInFlight: 4096,
	})
	if err != nil {
		return "", nil, err
	}
	mux := http.NewServeMux()
	mux.Handle("/v1/", oai)
	mux.Handle("/", srv)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", nil, err
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- srv.ServeHandler(ctx, ln, mux) }()
	return "http://" + ln.Addr().String(), func() { cancel(); <-done }, nil
}

func startProcess(ctx context.Context, dir string, cfg config, out io.Writer) (string, func(), error) {
	bin := cfg.bin
	if bin == "" {
		bin = filepath.Join(dir, "tandem")
		fmt.Fprintln(out, "building the tandem command…")
		b, err := exec.CommandContext(ctx, "go", "build", "-o", bin, "github.com/tandemrl/tandem/cmd/tandem").CombinedOutput()
		if err != nil {
			return "", nil, fmt.Errorf("go build: %v\n%s", err, b)
		}
	}
	store := filepath.Join(dir, "store")
	cmd := exec.Command(bin, "serve", "-role", "sampler", "-listen", "127.0.0.1:0", "-store", store,
		"-threads", fmt.Sprint(cfg.threads), "-max-in-flight", fmt.Sprint(4096))
	cmd.Env = append(os.Environ(), "TANDEM_API_KEY="+apiKey)
	cmd.Stderr = os.Stderr
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return "", nil, err
	}
	if err := cmd.Start(); err != nil {
		return "", nil, err
	}
	exited := make(chan struct{})
	first := make(chan string, 1)
	go func() {
		defer close(exited)
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			select {
			case first <- sc.Text():
			default:
			}
		}
		_ = cmd.Wait()
	}()
	stop := func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-exited:
		case <-time.After(15 * time.Second):
			_ = cmd.Process.Kill()
			<-exited
		}
	}
	select {
	case line := <-first:
		if !strings.HasPrefix(line, listening) {
			stop()
			return "", nil, fmt.Errorf("tandem serve printed %q, want %q…", line, listening)
		}
		return "http://" + strings.Fields(strings.TrimPrefix(line, listening))[0], stop, nil
	case <-exited:
		return "", nil, errors.New("tandem serve exited before listening")
	case <-time.After(time.Minute):
		stop()
		return "", nil, errors.New("tandem serve did not start within a minute")
	}
}
