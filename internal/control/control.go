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
	"errors"
	"net"
	"net/http"
	"strings"
	"time"

	"github.com/rs/zerolog"
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

// Limits that keep a slow or malformed client from holding the server (or the stop sequence):
// each connection has its own goroutine, and these bound what one can take.
const (
	readHeaderTimeout = 5 * time.Second
	idleTimeout       = 30 * time.Second
	maxHeaderBytes    = 8 << 10
)

// Server is the control server.
type Server struct {
	b     Backend
	token string
	log   zerolog.Logger
	srv   *http.Server
}

// New builds a server. token, when not empty, is required as "Authorization: Bearer TOKEN" on
// /prestop and /status. maxWait bounds how long a /prestop answer may take (the grace period):
// the write timeout is set beyond it.
func New(b Backend, token string, maxWait time.Duration, log zerolog.Logger) *Server {
	s := &Server{b: b, token: token, log: log}
	mux := http.NewServeMux()
	mux.HandleFunc("/prestop", s.prestop)
	mux.HandleFunc("/healthz", s.healthz)
	mux.HandleFunc("/readyz", s.readyz)
	mux.HandleFunc("/status", s.status)
	s.srv = &http.Server{
		Handler:           mux,
		ReadHeaderTimeout: readHeaderTimeout,
		ReadTimeout:       readHeaderTimeout,
		WriteTimeout:      maxWait + 5*time.Second,
		IdleTimeout:       idleTimeout,
		MaxHeaderBytes:    maxHeaderBytes,
	}
	return s
}

// Handler is the server's handler, for tests.
func (s *Server) Handler() http.Handler { return s.srv.Handler }

// Serve answers on ln until Close. It returns nil once closed.
func (s *Server) Serve(ln net.Listener) error {
	err := s.srv.Serve(ln)
	if errors.Is(err, http.ErrServerClosed) {
		return nil
	}
	return err
}

// Close stops the server at once; requests under way are cut.
func (s *Server) Close() error { return s.srv.Close() }

func (s *Server) authorized(w http.ResponseWriter, r *http.Request) bool {
	if s.token == "" {
		return true
	}
	got := r.Header.Get("Authorization")
	want := "Bearer " + s.token
	if subtle.ConstantTimeCompare([]byte(got), []byte(want)) == 1 {
		return true
	}
	// The token is never logged, nor what the client sent in its place.
	s.log.Warn().Str("path", r.URL.Path).Str("remote", r.RemoteAddr).Msg("control request without the right token refused")
	w.Header().Set("WWW-Authenticate", `Bearer realm="drainit"`)
	http.Error(w, "unauthorized", http.StatusUnauthorized)
	return false
}

func allow(w http.ResponseWriter, r *http.Request, methods ...string) bool {
	for _, m := range methods {
		if r.Method == m {
			return true
		}
	}
	w.Header().Set("Allow", strings.Join(methods, ", "))
	http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
	return false
}

func (s *Server) prestop(w http.ResponseWriter, r *http.Request) {
	if !allow(w, r, http.MethodGet, http.MethodPost) || !s.authorized(w, r) {
		return
	}
	s.log.Info().Str("remote", r.RemoteAddr).Str("user_agent", r.UserAgent()).Msg("/prestop called")
	st, err := s.b.Prestop(r.Context())
	if err != nil {
		http.Error(w, "prestop: "+err.Error(), http.StatusServiceUnavailable)
		return
	}
	writeJSON(w, http.StatusOK, st)
}

func (s *Server) healthz(w http.ResponseWriter, r *http.Request) {
	if !allow(w, r, http.MethodGet, http.MethodHead) {
		return
	}
	st, err := s.b.Status(r.Context())
	if err != nil || !st.Running {
		http.Error(w, "app not running", http.StatusServiceUnavailable)
		return
	}
	writeText(w, http.StatusOK, "ok\n")
}

func (s *Server) readyz(w http.ResponseWriter, r *http.Request) {
	if !allow(w, r, http.MethodGet, http.MethodHead) {
		return
	}
	st, err := s.b.Status(r.Context())
	switch {
	case err != nil:
		http.Error(w, "unavailable", http.StatusServiceUnavailable)
	case st.Draining:
		http.Error(w, "draining", http.StatusServiceUnavailable)
	case !st.Ready || !st.Running:
		http.Error(w, "not ready", http.StatusServiceUnavailable)
	default:
		writeText(w, http.StatusOK, "ready\n")
	}
}

func (s *Server) status(w http.ResponseWriter, r *http.Request) {
	if !allow(w, r, http.MethodGet) || !s.authorized(w, r) {
		return
	}
	st, err := s.b.Status(r.Context())
	if err != nil {
		http.Error(w, "unavailable", http.StatusServiceUnavailable)
		return
	}
	writeJSON(w, http.StatusOK, st)
}

func writeJSON(w http.ResponseWriter, code int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	_ = json.NewEncoder(w).Encode(v)
}

func writeText(w http.ResponseWriter, code int, s string) {
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.WriteHeader(code)
	_, _ = w.Write([]byte(s))
}
