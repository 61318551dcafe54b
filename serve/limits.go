package serve

import (
	"context"
	"errors"
	"fmt"
	"image"
	"io"
	"mime"
	"mime/multipart"
	"net/http"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/bicyc/bicyc/imaging"
	"github.com/bicyc/bicyc/infer"
)

// errBodiesFull: the memory for request bodies is taken by other requests;
// the server answers 503.
var errBodiesFull = errors.New("busy: the memory for request bodies is full; retry later")

// errBodyTimeout: the body did not arrive within the body timeout; the
// server answers 408.
var errBodyTimeout = errors.New("request body not received in time")

// errContentType: the request declares a content type the endpoint does
// not take; the server answers 415.
var errContentType = errors.New("unsupported content type")

// errBusy: every classification slot stayed taken for the queue timeout;
// the server answers 503.
var errBusy = errors.New("busy")

// readBody reads src, the request's body or a part of it, into memory
// within s.bodyTimeout (set on the connection before src was made), at most
// s.maxBody bytes (src is wrapped in http.MaxBytesReader by the caller),
// counting the buffer against s.bodies as it grows. The caller must call
// release, also after an error, once it no longer needs the bytes.
func (s *Server) readBody(src io.Reader) (body []byte, release func(), err error) {
	var held int64
	release = func() { s.bodies.give(held) }
	chunk := make([]byte, 32<<10)
	for {
		n, err := src.Read(chunk)
		if len(body)+n > cap(body) {
			grown := int64(max(2*cap(body), len(body)+n, 64<<10))
			grown = min(grown, s.maxBody+int64(len(chunk)))
			if !s.bodies.take(grown - int64(cap(body))) {
				return nil, release, errBodiesFull
			}
			held += grown - int64(cap(body))
			body = append(make([]byte, 0, grown), body...)
		}
		body = append(body, chunk[:n]...)
		switch {
		case errors.Is(err, io.EOF):
			return body, release, nil
		case errors.Is(err, os.ErrDeadlineExceeded):
			return nil, release, fmt.Errorf("%w: %d bytes within %v", errBodyTimeout, len(body), s.bodyTimeout)
		case err != nil:
			return nil, release, err
		}
	}
}

// limitBody sets the body deadline on the request's connection and returns
// the body bounded to s.maxBody bytes.
func (s *Server) limitBody(w http.ResponseWriter, r *http.Request) io.Reader {
	if s.bodyTimeout > 0 {
		// Unsupported only by test recorders, which have no connection.
		_ = http.NewResponseController(w).SetReadDeadline(time.Now().Add(s.bodyTimeout))
	}
	return http.MaxBytesReader(w, r.Body, s.maxBody)
}

// acquire waits for a classification slot, at most queueTimeout; the
// caller gives it back with release.
func (s *Server) acquire(ctx context.Context) error {
	select {
	case s.slots <- struct{}{}:
		return nil
	default:
	}
	s.waiting.Add(1)
	defer s.waiting.Add(-1)
	t := time.NewTimer(s.queueTimeout)
	defer t.Stop()
	select {
	case s.slots <- struct{}{}:
		return nil
	case <-t.C:
		return fmt.Errorf("%w: %d requests are being classified; retry later", errBusy, cap(s.slots))
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (s *Server) release() { <-s.slots }

// byteBudget counts bytes held against a limit. It is safe for concurrent
// use.
type byteBudget struct {
	mu          sync.Mutex
	used, limit int64
}

// take reserves n bytes if they fit under the limit.
func (b *byteBudget) take(n int64) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.used+n > b.limit {
		return false
	}
	b.used += n
	return true
}

// give returns n bytes taken before.
func (b *byteBudget) give(n int64) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.used -= n
}

// load returns the bytes held and the limit.
func (b *byteBudget) load() (used, limit int64) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.used, b.limit
}

// imageBody returns the reader of the image in r: its multipart field
// "image", or the whole body when the request declares no content type,
// an image/* type or application/octet-stream. Any other type is an error
// wrapping errContentType.
func imageBody(r *http.Request, body io.Reader) (io.Reader, error) {
	contentType := r.Header.Get("Content-Type")
	if contentType == "" {
		return body, nil
	}
	mediaType, params, err := mime.ParseMediaType(contentType)
	if err != nil {
		return nil, fmt.Errorf("content type %q: %w: %v", contentType, errContentType, err)
	}
	switch {
	case strings.HasPrefix(mediaType, "image/"), mediaType == "application/octet-stream":
		return body, nil
	case mediaType != "multipart/form-data":
		return nil, fmt.Errorf(`content type %s: %w: send the image as the body, typed image/* or application/octet-stream, or as the multipart/form-data field "image"`,
			mediaType, errContentType)
	}
	boundary := params["boundary"]
	if boundary == "" {
		return nil, errors.New("multipart/form-data without a boundary")
	}
	mr := multipart.NewReader(body, boundary)
	for {
		part, err := mr.NextPart()
		if errors.Is(err, io.EOF) {
			return nil, errors.New(`no multipart field named "image"`)
		}
		if err != nil {
			return nil, fmt.Errorf("multipart body: %w", err)
		}
		if part.FormName() == "image" {
			return part, nil
		}
	}
}

// requestStatus maps an error in reading, decoding or classifying a
// request to the HTTP status that tells the client what to do about it:
// the request's fault (4xx), a full or closing server (503), or the
// server's fault (500, for errors it does not know).
func requestStatus(err error) int {
	var tooBig *http.MaxBytesError
	var bad *badRequest
	switch {
	case errors.As(err, &tooBig), errors.Is(err, imaging.ErrTooLarge):
		return http.StatusRequestEntityTooLarge
	case errors.Is(err, errBodyTimeout):
		return http.StatusRequestTimeout
	case errors.Is(err, errBodiesFull), errors.Is(err, errBusy), errors.Is(err, infer.ErrClosed), errors.Is(err, errShuttingDown):
		return http.StatusServiceUnavailable
	case errors.Is(err, image.ErrFormat), errors.Is(err, errContentType):
		return http.StatusUnsupportedMediaType
	case errors.Is(err, errNotFound):
		return http.StatusNotFound
	case errors.Is(err, context.DeadlineExceeded):
		// The request's deadline passed while its images were decoded.
		return http.StatusGatewayTimeout
	case errors.Is(err, context.Canceled):
		// The client went away and its context stopped the run.
		return statusClientClosed
	case errors.As(err, &bad):
		return http.StatusBadRequest
	}
	return http.StatusBadRequest
}

// statusClientClosed is nginx's 499, "client closed request": the status
// (logged and counted, never read by the client) of a request whose
// client went away before its answer.
const statusClientClosed = 499

// badRequest marks an error as the request's fault (400).
type badRequest struct{ err error }

func (e *badRequest) Error() string { return e.err.Error() }
func (e *badRequest) Unwrap() error { return e.err }

func badRequestf(format string, args ...any) error {
	return &badRequest{fmt.Errorf(format, args...)}
}
