// Package control is drainit's HTTP control server: the target of a Kubernetes
// `lifecycle.preStop.httpGet`, and the app's health endpoints.
//
//	GET|POST /prestop  start the stop sequence; answer once the drain is done
//	GET /healthz       200 while drainit and the app run
//	GET /readyz        200 while the app is ready, 503 from the first trigger on
//	GET /status        JSON: phase, app pid, uptime, timeline
//
// The server holds no state of its own: every answer comes from the supervisor's loop through
// Backend, so what it reports is what the loop decided.
//
// # Nobody can lock the kubelet out
//
// An unanswered probe restarts the container or takes it out of its Service, and a failed
// httpGet preStop skips the drain, so no client may starve the others, whatever it does with its
// connections. http1.Server's admission (its doc) does it with the limits below, never refusing
// anyone nor cutting a request in its handler. docs/design.md ("Why the control server sheds as
// it does") has the alternatives tried and the measurements behind these values.
package control

import (
	"context"
	"crypto/subtle"
	"encoding/json"
	"errors"
	"net"
	"slices"
	"strings"
	"sync/atomic"
	"time"

	"github.com/rs/zerolog"

	"github.com/drainit/drainit/internal/config"
	"github.com/drainit/drainit/internal/http1"
	"github.com/drainit/drainit/internal/logline"
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
	// done, with the status at that moment. kubelet says the call is the kubelet's preStop hook
	// (FromKubelet): the kubelet waits for its answer for the pod's grace period at most, and a
	// stop signal that comes while the call still waits says that the grace period is over.
	// connected says whether the caller still holds its connection, waiting (nil: unknown, taken
	// as yes): a call given up (`drainit prestop --timeout`, a hook killed) waits no more, and a
	// signal after it says nothing of the grace period.
	Prestop(ctx context.Context, kubelet bool, connected func() bool) (Status, error)
	// Status returns the current status.
	Status(ctx context.Context) (Status, error)
}

// The server's limits (docs/design.md has why these values).
const (
	// headerTimeout bounds how long a client may take to send its request head, from its
	// connection's accept (a server starved past it still reads what came: http1.Server).
	headerTimeout = 2 * time.Second
	// readTimeout bounds the whole request, a body included; it is also the write timeout.
	readTimeout = 5 * time.Second
	// maxConns bounds the connections open at once.
	maxConns = 512
	// maxConnsPerIP is one remote address's share of them: while an address holds more, a full
	// server sheds only such addresses' connections.
	maxConnsPerIP = 64
	// shedAfter is how long a new connection has to deliver its request before a full server
	// may shed it.
	shedAfter = 250 * time.Millisecond
	// quickShedRate is how many connections a second of an address beyond its share a full
	// server sheds before their shedAfter: a probe from elsewhere waits behind at most the
	// listen backlog (somaxconn, 4096 by default) at this rate, under a second.
	quickShedRate = 5000
	// maxPrestopWaiting bounds the /prestop calls waiting for the drain at once: an eighth of
	// maxConns (of the connection limit, at least 1), so that probes always find room (the
	// kubelet makes one call per container).
	maxPrestopWaiting = maxConns / 8
	// hangupPoll is how often a waiting /prestop looks whether its caller has hung up.
	hangupPoll = 250 * time.Millisecond
	// shedLogEvery spaces the warnings about connections shed: a client re-opening hundreds
	// of connections a second must not flood drainit's log.
	shedLogEvery = 10 * time.Second
	// fdReserve is how many of drainit's file descriptors the server leaves to the rest of
	// drainit: an exec hook takes 5 as it starts and 2 while it runs, an HTTP hook or the ready
	// probe 1, the adaptive drain two netlink sockets and a /proc file, the termination log 1.
	fdReserve = 16
)

// PrestopUserAgent is the User-Agent of `drainit prestop`, the exec form of the kubelet's
// preStop hook.
const PrestopUserAgent = "drainit-prestop"

// kubeletUserAgent starts the User-Agent of the kubelet's httpGet lifecycle hooks:
// "kube-lifecycle/MAJOR.MINOR", unless the hook's httpHeaders set another (k8s.io/kubernetes
// v1.33, pkg/kubelet/lifecycle; docs/kubelet-stop-sequence.md has the kubelet's stop sequence).
const kubeletUserAgent = "kube-lifecycle/"

// FromKubelet says whether a /prestop call with this User-Agent is the kubelet's preStop hook:
// its httpGet form (kubeletUserAgent) or its exec form, `drainit prestop`.
func FromKubelet(userAgent string) bool {
	return strings.HasPrefix(userAgent, kubeletUserAgent) || userAgent == PrestopUserAgent
}

// connLimit is how many connections the server holds at once with nofile descriptors allowed
// (RLIMIT_NOFILE) and open already: maxConns, or fewer where the descriptors would run out
// first, leaving fdReserve, and at least 1. Out of descriptors, the server could accept no
// newcomer, and a full server's shedding, which makes room for a newcomer it has accepted, never
// came: a client holding slow connections locked out the kubelet's probes and the exec hooks.
func connLimit(nofile uint64, open int) int {
	room := int64(min(nofile, 1<<20)) - int64(open) - fdReserve
	return int(max(1, min(maxConns, room)))
}

// Server is the control server.
type Server struct {
	b     Backend
	token string
	log   zerolog.Logger
	srv   *http1.Server

	// The log's warnings about connections shed and requests refused for their token, and its
	// lines about /prestop calls: each at most once per shedLogEvery, with the count.
	shedLog, refusedLog, prestopLog logline.Limiter
	// prestopWaiting counts the /prestop calls waiting for the drain, at most prestopMax
	// (maxPrestopWaiting, or an eighth of a lower connection limit).
	prestopWaiting atomic.Int32
	prestopMax     int32
}

// New builds a server. token, when not empty, is required as "Authorization: Bearer TOKEN" on
// /prestop and /status. maxWait bounds how long a /prestop answer may take (the grace period).
func New(b Backend, token string, maxWait time.Duration, log zerolog.Logger) *Server {
	conns := maxConns
	if nofile, open, ok := descriptors(); ok {
		conns = connLimit(nofile, open)
	}
	if conns < maxConns {
		log.Warn().Int("max_conns", conns).Int("fd_reserve", fdReserve).
			Msg("control server: its connections are limited by the open files drainit may have (RLIMIT_NOFILE), less what it keeps for hooks")
	}
	s := &Server{b: b, token: token, log: log, prestopMax: int32(max(1, conns/8))}
	for _, l := range []*logline.Limiter{&s.shedLog, &s.refusedLog, &s.prestopLog} {
		l.Every = shedLogEvery
	}
	s.srv = &http1.Server{
		Handler:        s.Handle,
		HeaderTimeout:  headerTimeout,
		ReadTimeout:    readTimeout,
		HandlerTimeout: maxWait + readTimeout,
		WriteTimeout:   readTimeout,
		MaxConns:       conns,
		MaxConnsPerIP:  min(maxConnsPerIP, max(1, conns/8)), // an eighth, as 64 is of maxConns
		ShedAfter:      shedAfter,
		QuickShedRate:  quickShedRate,
		AcceptError: func(err error, retry time.Duration) {
			log.Warn().Err(err).Dur("retry_in", retry).Msg("control server cannot accept a connection")
		},
		Shed: s.shed,
	}
	return s
}

// shed logs, at most once per shedLogEvery, that connections are being closed unanswered to
// make room: the sign of a client holding many open without sending its request.
func (s *Server) shed(ip string) {
	if n, ok := s.shedLog.Tick(time.Now()); ok {
		s.log.Warn().Str("remote_ip", ip).Int("shed", n).
			Msg("control server: closing connections that send no request, to make room (a client holds many open)")
	}
}

// refused logs a request refused for its token, at most once per shedLogEvery with how many
// were refused since: a client without the token must not be able to flood drainit's log.
func (s *Server) refused(r *http1.Request) {
	if n, ok := s.refusedLog.Tick(time.Now()); ok {
		s.log.Warn().Str("path", r.Path).Str("remote", r.RemoteAddr).Int("refused", n).
			Msg("control request without the right token refused")
	}
}

// sameToken compares in a time that depends on the longer of the two only: not on where they
// differ, nor on the token's length (subtle.ConstantTimeCompare returns at once on a length that
// differs).
func sameToken(got, want string) bool {
	n := max(len(got), len(want))
	a, b := make([]byte, n), make([]byte, n)
	copy(a, got)
	copy(b, want)
	return subtle.ConstantTimeCompare(a, b)&subtle.ConstantTimeEq(int32(len(got)), int32(len(want))) == 1
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
		// A /prestop waits in its handler, where it is never shed: without a cap, callers
		// holding every connection would starve the kubelet's probes. The drain is under way
		// by then, which is all one more call could ask for.
		if s.prestopWaiting.Add(1) > s.prestopMax {
			s.prestopWaiting.Add(-1)
			return text(503, "too many /prestop calls waiting; the stop sequence is under way\n")
		}
		defer s.prestopWaiting.Add(-1)
		if n, ok := s.prestopLog.Tick(time.Now()); ok {
			s.log.Info().Str("remote", r.RemoteAddr).Str("user_agent", r.Header.Get("User-Agent")).Int("calls", n).Msg("/prestop called")
		}
		ctx, cancel := context.WithCancelCause(ctx)
		defer cancel(nil)
		go watchCaller(ctx, r.Connected, cancel)
		st, err := s.b.Prestop(ctx, FromKubelet(r.Header.Get("User-Agent")), r.Connected)
		if err != nil {
			if cause := context.Cause(ctx); errors.Is(cause, errHungUp) {
				err = cause
			}
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

// errHungUp ends the wait of a /prestop whose caller closed its connection.
var errHungUp = errors.New("the caller closed its connection")

// watchCaller ends a waiting /prestop (cancel) once its caller has hung up, so that the call
// gives up its place among the waiting ones (prestopMax) and its connection, where a retry (the
// kubelet's, after a restart) would otherwise find them all taken until the drain ends. It
// polls: the server owns the connection's reads. A client that shuts down its sending side and
// still reads looks gone too (http1.Request.Connected), and gets its answer early: the drain
// goes on all the same.
func watchCaller(ctx context.Context, connected func() bool, cancel context.CancelCauseFunc) {
	t := time.NewTicker(hangupPoll)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			if !connected() {
				cancel(errHungUp)
				return
			}
		}
	}
}

// check applies the method list and, when auth, the token.
func (s *Server) check(r *http1.Request, auth bool, methods ...string) (http1.Response, bool) {
	if !slices.Contains(methods, r.Method) {
		resp := text(405, "method not allowed\n")
		resp.Header = map[string]string{"Allow": strings.Join(methods, ", ")}
		return resp, false
	}
	if !auth || s.token == "" {
		return http1.Response{}, true
	}
	if tok, ok := config.BearerToken(r.Header.Get("Authorization")); ok && sameToken(tok, s.token) {
		return http1.Response{}, true
	}
	// The token is never logged, nor what the client sent in its place.
	s.refused(r)
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
