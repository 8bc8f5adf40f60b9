// Package control is drainit's HTTP control server: the target of a Kubernetes
// `lifecycle.preStop.httpGet`, and the app's health endpoints.
//
//	GET|POST /prestop  start the stop sequence; answer once the drain is done
//	GET /healthz       200 while drainit and the app run
//	GET /readyz        200 once the app is ready, 503 from the first trigger on
//	GET /status        JSON: phase, app pid, uptime, timeline
//
// The server holds no state of its own: every answer comes from the supervisor's loop through
// Backend, so what it reports is what the loop decided.
package control

import (
	"context"
	"crypto/subtle"
	"encoding/json"
	"net"
	"strings"
	"time"

	"github.com/rs/zerolog"

	"github.com/drainit/drainit/internal/http1"
)

// Mark is one entry of the stop sequence's timeline.
type Mark struct {
	What    string  `json:"what"`
	Elapsed float64 `json:"elapsed_seconds"` // since the first trigger, or the app's start before one
}

// Status is a snapshot of the supervisor.
type Status struct {
	Phase    string  `json:"phase"`
	AppPID   int     `json:"app_pid"`
	Uptime   float64 `json:"uptime_seconds"`
	Running  bool    `json:"app_running"`
	Ready    bool    `json:"ready"`
	Draining bool    `json:"draining"` // a trigger has been seen
	Drained  bool    `json:"drained"`  // the drain is over
	Timeline []Mark  `json:"timeline"`
}

// Backend is the supervisor as the server sees it. Both calls go through the supervisor's loop;
// they return early with ctx's error if ctx ends first.
type Backend interface {
	// Prestop starts the stop sequence (or joins the one under way) and returns once the drain is
	// done, with the status at that moment.
	Prestop(ctx context.Context) (Status, error)
	// Status returns the current status.
	Status(ctx context.Context) (Status, error)
}

// readTimeout bounds how long a client may take to send its request: a client that sends its
// headers a byte at a time is cut off then, and holds up no one else meanwhile (each connection
// has its own goroutine).
const readTimeout = 5 * time.Second

// Server is the control server.
type Server struct {
	b     Backend
	token string
	log   zerolog.Logger
	srv   *http1.Server
}

// New builds a server. token, when not empty, is required as "Authorization: Bearer TOKEN" on
// /prestop and /status. maxWait bounds how long a /prestop answer may take (the grace period).
func New(b Backend, token string, maxWait time.Duration, log zerolog.Logger) *Server {
	s := &Server{b: b, token: token, log: log}
	s.srv = &http1.Server{
		Handler:        s.Handle,
		ReadTimeout:    readTimeout,
		HandlerTimeout: maxWait + readTimeout,
		WriteTimeout:   readTimeout,
		AcceptError: func(err error, retry time.Duration) {
			log.Warn().Err(err).Dur("retry_in", retry).Msg("control server cannot accept a connection")
		},
	}
	return s
}

// Serve answers on ln until Close. It returns nil once closed.
func (s *Server) Serve(ln net.Listener) error {
	if err := s.srv.Serve(ln); err != http1.ErrServerClosed {
		return err
	}
	return nil
}

// Close stops the server at once; requests under way are cut.
func (s *Server) Close() error { return s.srv.Close() }

// Handle answers one request; it is the server's handler, exported for tests.
func (s *Server) Handle(ctx context.Context, r *http1.Request) http1.Response {
	switch r.Path {
	case "/prestop":
		if resp, ok := s.check(r, true, "GET", "POST"); !ok {
			return resp
		}
		s.log.Info().Str("remote", r.RemoteAddr).Str("user_agent", r.Header.Get("User-Agent")).Msg("/prestop called")
		st, err := s.b.Prestop(ctx)
		if err != nil {
			return text(503, "prestop: "+err.Error()+"\n")
		}
		return jsonResp(st)
	case "/healthz":
		if resp, ok := s.check(r, false, "GET", "HEAD"); !ok {
			return resp
		}
		if st, err := s.b.Status(ctx); err != nil || !st.Running {
			return text(503, "app not running\n")
		}
		return text(200, "ok\n")
	case "/readyz":
		if resp, ok := s.check(r, false, "GET", "HEAD"); !ok {
			return resp
		}
		st, err := s.b.Status(ctx)
		switch {
		case err != nil:
			return text(503, "unavailable\n")
		case st.Draining:
			return text(503, "draining\n")
		case !st.Ready || !st.Running:
			return text(503, "not ready\n")
		}
		return text(200, "ready\n")
	case "/status":
		if resp, ok := s.check(r, true, "GET"); !ok {
			return resp
		}
		st, err := s.b.Status(ctx)
		if err != nil {
			return text(503, "unavailable\n")
		}
		return jsonResp(st)
	}
	return text(404, "not found\n")
}

// check applies the method list and, when auth, the token.
func (s *Server) check(r *http1.Request, auth bool, methods ...string) (http1.Response, bool) {
	allowed := false
	for _, m := range methods {
		allowed = allowed || r.Method == m
	}
	if !allowed {
		resp := text(405, "method not allowed\n")
		resp.Header = map[string]string{"Allow": strings.Join(methods, ", ")}
		return resp, false
	}
	if !auth || s.token == "" {
		return http1.Response{}, true
	}
	got := r.Header.Get("Authorization")
	if subtle.ConstantTimeCompare([]byte(got), []byte("Bearer "+s.token)) == 1 {
		return http1.Response{}, true
	}
	// The token is never logged, nor what the client sent in its place.
	s.log.Warn().Str("path", r.Path).Str("remote", r.RemoteAddr).Msg("control request without the right token refused")
	resp := text(401, "unauthorized\n")
	resp.Header = map[string]string{"WWW-Authenticate": `Bearer realm="drainit"`}
	return resp, false
}

func text(code int, body string) http1.Response {
	return http1.Response{Status: code, Body: []byte(body)}
}

func jsonResp(v any) http1.Response {
	b, err := json.Marshal(v)
	if err != nil {
		return text(500, "encoding status: "+err.Error()+"\n")
	}
	return http1.Response{Status: 200, ContentType: "application/json", Body: append(b, '\n')}
}
