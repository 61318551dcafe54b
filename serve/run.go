package serve

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"time"
)

// Timeouts bound the HTTP connections Serve accepts.
type Timeouts struct {
	// Read limits reading a request, body included; Write the time from
	// the end of the request headers to the end of the response.
	Read, Write time.Duration
	// Shutdown is how long Serve waits for requests in flight once ctx
	// ends.
	Shutdown time.Duration
}

// Serve answers Public on ln and, unless adminLn is nil, Admin on adminLn
// until ctx ends, reloading the models (Reload) whenever reload delivers
// (a SIGHUP, say; nil never does); then it marks the server unready
// (/readyz 503), stops accepting connections and waits up to t.Shutdown
// for requests in flight. It returns nil after a clean shutdown. It does
// not Close the Server.
func (s *Server) Serve(ctx context.Context, ln, adminLn net.Listener, t Timeouts, reload <-chan struct{}) error {
	newHTTP := func(h http.Handler) *http.Server {
		return &http.Server{
			Handler:           h,
			ReadHeaderTimeout: min(t.Read, 10*time.Second),
			ReadTimeout:       t.Read,
			WriteTimeout:      t.Write,
			IdleTimeout:       2 * time.Minute,
		}
	}
	servers := []*http.Server{newHTTP(s.Public)}
	listeners := []net.Listener{ln}
	if adminLn != nil {
		servers = append(servers, newHTTP(s.Admin))
		listeners = append(listeners, adminLn)
	}
	done := make(chan error, len(servers))
	for i, srv := range servers {
		go func() { done <- srv.Serve(listeners[i]) }()
	}
	if err := s.wait(ctx, done, reload); err != nil {
		for _, srv := range servers {
			srv.Close()
		}
		return err
	}
	s.ready.Store(false)
	shutdownCtx, cancel := context.WithTimeout(context.Background(), t.Shutdown)
	defer cancel()
	var errs []error
	for _, srv := range servers {
		if err := srv.Shutdown(shutdownCtx); err != nil {
			errs = append(errs, fmt.Errorf("shutdown: %w", err))
		}
	}
	for range servers {
		if err := <-done; !errors.Is(err, http.ErrServerClosed) {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// wait returns nil when ctx ends, or the error of a server that stopped
// on its own, reloading the models whenever reload delivers.
func (s *Server) wait(ctx context.Context, done <-chan error, reload <-chan struct{}) error {
	for {
		select {
		case err := <-done:
			return err
		case <-reload:
			// Reload logs its outcome; a failure leaves the old versions serving.
			s.Reload()
		case <-ctx.Done():
			return nil
		}
	}
}
