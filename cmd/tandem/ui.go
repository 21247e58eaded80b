package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"time"

	"github.com/tandemrl/tandem/ui"
)

// UIListeningPrefix starts the line `tandem ui` prints once it serves,
// followed by its URL (useful with -listen 127.0.0.1:0).
const UIListeningPrefix = "tandem ui: serving "

type uiFlags struct {
	runs, listen, apiKey string
	allowRemote          bool
}

// runUI serves the run dashboard (package ui) over a runs folder until ctx
// ends. Loopback needs no key; any other address needs -allow-remote and an
// API key (-api-key or $TANDEM_API_KEY), checked as tandem serve checks it.
func runUI(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlags("ui", stderr)
	var f uiFlags
	fs.StringVar(&f.runs, "runs", "runs", "runs folder: one folder per `tandem train` run")
	fs.StringVar(&f.listen, "listen", "127.0.0.1:8080", "host:port to listen on (port 0 picks a free one); a non-loopback host needs -allow-remote and an API key")
	fs.BoolVar(&f.allowRemote, "allow-remote", false, "allow -listen on an address other than loopback (requires an API key)")
	fs.StringVar(&f.apiKey, "api-key", "", "API key clients must send (X-API-Key or Authorization: Bearer; a browser opens /?api_key=KEY once); default $"+EnvAPIKey+"; required beyond loopback")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if err := checkUIFlags(&f); err != nil {
		return err
	}
	if st, err := os.Stat(f.runs); err != nil || !st.IsDir() {
		return usagef("ui: -runs %q is not a folder", f.runs)
	}
	url, wait, stop, err := startUI(f.runs, f.listen, f.apiKey)
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "%s%s (runs %s)\n", UIListeningPrefix, url, f.runs)
	select {
	case err := <-wait:
		return fmt.Errorf("ui: %w", err)
	case <-ctx.Done():
	}
	return stop()
}

// startUI serves the dashboard over runs on listen and returns its URL, a
// channel that yields Serve's error if it fails, and stop, which shuts the
// server down (event streams are cut after a 2 s grace) and returns its
// error.
func startUI(runs, listen, apiKey string) (url string, failed <-chan error, stop func() error, err error) {
	h, err := ui.New(runs, ui.Options{APIKey: apiKey})
	if err != nil {
		return "", nil, nil, fmt.Errorf("ui: %w", err)
	}
	ln, err := net.Listen("tcp", listen)
	if err != nil {
		return "", nil, nil, fmt.Errorf("ui: %w", err)
	}
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second}
	done := make(chan error, 1) // the one result of Serve
	go func() { done <- srv.Serve(ln) }()
	stop = func() error {
		// Event streams end when their requests' contexts do: Shutdown
		// waits for idle connections only, so close the rest after a grace
		// period.
		sctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		serr := srv.Shutdown(sctx)
		if serr != nil {
			serr = srv.Close()
		}
		if err := <-done; !errors.Is(err, http.ErrServerClosed) {
			return fmt.Errorf("ui: %w", err)
		}
		return serr
	}
	return "http://" + ln.Addr().String(), done, stop, nil
}

// checkUIListen refuses, when with is set, a dashboard beside tandem serve
// (serve -ui) on anything but a loopback address.
func checkUIListen(with bool, listen string) error {
	if host, _, err := net.SplitHostPort(listen); with && (err != nil || !isLoopback(host)) {
		return usagef("serve: -ui-listen %q: want a loopback host:port such as 127.0.0.1:8080 (to expose the dashboard, run tandem ui -allow-remote with an API key)", listen)
	}
	return nil
}

// serveUI starts the dashboard beside tandem serve (serve -ui) over runs,
// created if missing, on listen (checked by checkUIListen). It prints the
// dashboard's URL to w; stop shuts it down.
func serveUI(runs, listen string, w io.Writer) (stop func(), err error) {
	if err := os.MkdirAll(runs, 0o755); err != nil {
		return nil, fmt.Errorf("ui: %w", err)
	}
	url, _, stopUI, err := startUI(runs, listen, "")
	if err != nil {
		return nil, err
	}
	fmt.Fprintf(w, "dashboard: %s (runs in %s)\n", url, runs)
	return func() { _ = stopUI() }, nil
}

// checkUIFlags applies the listen rule: loopback is open; anything else
// needs -allow-remote (checkListen) and an API key.
func checkUIFlags(f *uiFlags) error {
	if f.apiKey == "" {
		f.apiKey = os.Getenv(EnvAPIKey)
	}
	if err := checkListen("ui", f.listen, f.allowRemote); err != nil {
		return err
	}
	host, _, _ := net.SplitHostPort(f.listen)
	if !isLoopback(host) && f.apiKey == "" {
		return usagef("ui: -listen %q is beyond loopback: pass -api-key or set %s so the dashboard is not open to the network", f.listen, EnvAPIKey)
	}
	return nil
}
