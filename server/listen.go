package server

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"time"
)

// ShutdownWait bounds how long Serve waits for calls in progress after its
// ctx ends.
const ShutdownWait = 10 * time.Second

// Run listens on Config.Addr and serves until ctx ends (see Serve).
func (s *Server) Run(ctx context.Context) error {
	ln, err := net.Listen("tcp", s.cfg.Addr)
	if err != nil {
		return fmt.Errorf("server: listen on %s: %w", s.cfg.Addr, err)
	}
	return s.Serve(ctx, ln)
}

// Serve answers API calls on ln until ctx ends. It then stops accepting
// connections, cancels running calls (pending polls answer try_again),
// waits up to ShutdownWait for answers in progress, and closes the server.
// It returns nil after a shutdown caused by ctx, or the error that stopped
// serving.
func (s *Server) Serve(ctx context.Context, ln net.Listener) error {
	return s.ServeHandler(ctx, ln, s)
}

// ServeHandler is Serve with h answering the connections: a handler that
// passes the API to s and serves more beside it (e.g. checkpoint archives
// at the URLs the archive endpoint links to). Shutdown is Serve's.
func (s *Server) ServeHandler(ctx context.Context, ln net.Listener, h http.Handler) error {
	hs := &http.Server{
		Handler:           h,
		ReadHeaderTimeout: 10 * time.Second,
		IdleTimeout:       2 * time.Minute,
		MaxHeaderBytes:    1 << 20,
	}
	errc := make(chan error, 1)
	go func() { errc <- hs.Serve(ln) }()
	var serveErr error
	select {
	case serveErr = <-errc:
	case <-ctx.Done():
	}
	wctx, cancel := context.WithTimeout(context.Background(), ShutdownWait)
	defer cancel()
	s.cancel(ErrClosed) // running calls and long polls end now
	shutErr := hs.Shutdown(wctx)
	if serveErr == nil {
		serveErr = <-errc
	}
	closeErr := s.Close(wctx)
	if errors.Is(serveErr, http.ErrServerClosed) {
		serveErr = nil
	}
	return errors.Join(serveErr, shutErr, closeErr)
}
