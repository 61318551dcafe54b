package serve

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"time"

	"google.golang.org/grpc"
)

// Timeouts bound the connections Serve accepts.
type Timeouts struct {
	// Read limits reading a request, body included; Write the time from
	// the end of the request headers to the end of the response. Over
	// gRPC, Write bounds each call and Read a new connection's handshake.
	Read, Write time.Duration
	// Shutdown is how long Serve waits for requests in flight once ctx
	// ends.
	Shutdown time.Duration
}

// Listeners are where Serve answers; a nil listener is not served.
type Listeners struct {
	// Public serves the Public handler, Admin the Admin one.
	Public, Admin net.Listener
	// GRPC serves the Open Inference Protocol over gRPC (NewGRPC),
	// AdminGRPC the same with the model repository RPCs.
	GRPC, AdminGRPC net.Listener
}

// Serve answers on every listener of l until ctx ends, reloading the
// models (Reload) whenever reload delivers (a SIGHUP, say; nil never
// does); then it marks the server unready (/readyz 503, gRPC health
// NOT_SERVING), stops accepting connections and waits up to t.Shutdown for
// requests in flight, over HTTP and gRPC alike. It returns nil after a
// clean shutdown. It does not Close the Server.
func (s *Server) Serve(ctx context.Context, l Listeners, t Timeouts, reload <-chan struct{}) error {
	newHTTP := func(h http.Handler) *http.Server {
		return &http.Server{
			Handler:           h,
			ReadHeaderTimeout: min(t.Read, 10*time.Second),
			ReadTimeout:       t.Read,
			WriteTimeout:      t.Write,
			IdleTimeout:       2 * time.Minute,
		}
	}
	var servers []listenerServer
	var listeners []net.Listener
	add := func(ln net.Listener, srv listenerServer) {
		if ln != nil {
			servers = append(servers, srv)
			listeners = append(listeners, ln)
		}
	}
	add(l.Public, httpServer(newHTTP(s.Public)))
	add(l.Admin, httpServer(newHTTP(s.Admin)))
	if l.GRPC != nil {
		add(l.GRPC, grpcServer(s.NewGRPC(t, false)))
	}
	if l.AdminGRPC != nil {
		add(l.AdminGRPC, grpcServer(s.NewGRPC(t, true)))
	}
	done := make(chan error, len(servers))
	for i, srv := range servers {
		go func() { done <- srv.serve(listeners[i]) }()
	}
	if err := s.wait(ctx, done, reload); err != nil {
		for _, srv := range servers {
			srv.close()
		}
		return err
	}
	s.ready.Store(false)
	shutdownCtx, cancel := context.WithTimeout(context.Background(), t.Shutdown)
	defer cancel()
	stopped := make(chan error, len(servers))
	for _, srv := range servers {
		go func() { stopped <- srv.shutdown(shutdownCtx) }()
	}
	var errs []error
	for range servers {
		if err := <-stopped; err != nil {
			errs = append(errs, fmt.Errorf("shutdown: %w", err))
		}
	}
	for range servers {
		if err := <-done; err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// listenerServer is an HTTP or a gRPC server as Serve runs it: serve
// answers on a listener (nil once stopped by shutdown or close), shutdown
// stops it gracefully within ctx, close at once.
type listenerServer struct {
	serve    func(net.Listener) error
	shutdown func(ctx context.Context) error
	close    func()
}

func httpServer(srv *http.Server) listenerServer {
	return listenerServer{
		serve: func(ln net.Listener) error {
			if err := srv.Serve(ln); !errors.Is(err, http.ErrServerClosed) {
				return err
			}
			return nil
		},
		shutdown: srv.Shutdown,
		close:    func() { srv.Close() },
	}
}

// grpcServer runs srv; its shutdown lets the calls in flight finish
// (GracefulStop) until ctx ends, and then cancels them.
func grpcServer(srv *grpc.Server) listenerServer {
	return listenerServer{
		serve: srv.Serve,
		shutdown: func(ctx context.Context) error {
			graceful := make(chan struct{})
			go func() {
				srv.GracefulStop()
				close(graceful)
			}()
			select {
			case <-graceful:
				return nil
			case <-ctx.Done():
				srv.Stop()
				<-graceful
				return fmt.Errorf("grpc: %w", ctx.Err())
			}
		},
		close: srv.Stop,
	}
}

// wait returns nil when ctx ends, or the error of a server that stopped
// on its own, reloading the models whenever reload delivers.
func (s *Server) wait(ctx context.Context, done <-chan error, reload <-chan struct{}) error {
	for {
		select {
		case err := <-done:
			return fmt.Errorf("a listener stopped: %w", cmp.Or(err, errStopped))
		case <-reload:
			// Reload logs its outcome; a failure leaves the old versions serving.
			s.Reload()
		case <-ctx.Done():
			return nil
		}
	}
}

// errStopped: a server stopped serving without an error of its own.
var errStopped = errors.New("stopped")
