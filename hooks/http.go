package hooks

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"html"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/drainit/drainit/internal/config"
	"github.com/drainit/drainit/internal/http1"
)

// errSnippet bounds how much of a failed response's body goes into the error.
const errSnippet = 256

// NewHTTP is the HTTP hook named name that makes request c (config.ParseCall).
//
// Only plain http:// is spoken (drainit's own small HTTP/1.1, see internal/http1: net/http would
// triple the binary); reach a TLS endpoint from an exec hook. The hook succeeds on a 2xx status;
// redirects are not followed. It never goes through a proxy: hooks call agents on loopback and
// the pod network, and a container's HTTP_PROXY is for the app's own traffic. Run is bounded by
// its context only; it returns as soon as a 2xx answer's head has come (the body is not waited
// for), and keeps at most a few hundred bytes of a failed response's body.
func NewHTTP(name string, c config.Call) Hook {
	return &httpHook{name: name, method: c.Method, url: c.URL, headers: c.Header, body: c.Body}
}

// httpHook makes one request.
type httpHook struct {
	name    string
	method  string
	url     *url.URL
	headers map[string]string
	body    string
}

func (h *httpHook) Name() string { return h.name }

// Run makes the request and returns nil on a 2xx status; otherwise an error naming the status
// and the start of the body, or why no response came (wrapping ctx's cause if ctx ended).
func (h *httpHook) Run(ctx context.Context) error {
	start := time.Now()
	what := h.method + " " + h.url.Redacted()
	res, err := http1.Do(ctx, http1.Call{Method: h.method, URL: h.url.String(), Header: h.headers, Body: []byte(h.body),
		SuccessHeadOnly: true})
	if err != nil {
		if ctx.Err() != nil || errors.Is(err, context.DeadlineExceeded) {
			// The connection's deadline is ctx's and can fire a moment before ctx reports it.
			<-ctx.Done()
			return fmt.Errorf("http hook %q: %s: %w", h.name, what, ended(ctx, time.Since(start)))
		}
		// A malformed answer is quoted (its status line): masked as its body would be.
		return fmt.Errorf("http hook %q: %s: %w", h.name, what, maskedError{string(h.mask([]byte(err.Error()), false)), err})
	}
	if res.Status >= 200 && res.Status <= 299 {
		return nil
	}
	status := statusText(res.Status)
	if res.FieldsTooLarge {
		return fmt.Errorf("http hook %q: %s: status %s (the answer's header fields passed %d KiB: its body was not read)",
			h.name, what, status, http1.MaxHeaderBytes>>10)
	}
	snippet := bytes.TrimSpace(h.mask(res.Body, len(res.Body) >= http1.MaxBodyBytes))
	snippet = snippet[:min(len(snippet), errSnippet)]
	if len(snippet) == 0 {
		return fmt.Errorf("http hook %q: %s: status %s", h.name, what, status)
	}
	return fmt.Errorf("http hook %q: %s: status %s: %q", h.name, what, status, snippet)
}

// minSecret is the shortest header value, word of one, or body that mask hides: shorter ones
// ("1", "no") hold no secret and would garble every answer that happens to contain them.
const minSecret = 4

// maskedError is an error whose message had h's secrets masked (httpHook.mask).
type maskedError struct {
	msg string
	err error
}

func (e maskedError) Error() string { return e.msg }
func (e maskedError) Unwrap() error { return e.err }

// minBodyWord is the shortest word of the body mask hides on its own: a token, an id; shorter
// ones are the JSON's keys and small values, which would garble every answer.
const minBodyWord = 8

// mask hides in body, an answer to h, what h sent that Redact hides in its configuration: its
// header values, each word of them too (the token of "Bearer TOKEN", echoed alone), and its
// body, each longer word of it too (the token of {"token":"…"}), also as JSON, a URL's query
// and HTML escape them. An error page or a debugging endpoint that quotes its request would
// otherwise put a deregistration call's credentials in drainit's log. Longest first, so that a
// whole value shows as one mask. The whole body is masked before the error cuts it, so that no
// part of a secret is left at that cut; where the answer was cut already (cut: at
// http1.MaxBodyBytes), a secret's start at its end is masked too.
func (h *httpHook) mask(body []byte, cut bool) []byte {
	var secrets []string
	for _, v := range h.headers {
		secrets = append(secrets, v)
		secrets = append(secrets, strings.Fields(v)...)
	}
	secrets = append(secrets, h.body)
	for _, w := range strings.FieldsFunc(h.body, func(r rune) bool {
		return !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("-_.~+/=", r))
	}) {
		if len(w) >= minBodyWord {
			secrets = append(secrets, w)
		}
	}
	return MaskSecrets(body, secrets, minSecret, cut)
}

// MaskSecrets replaces in text each of secrets of at least min bytes with xxxxx: as it is, and as
// JSON, a URL's query and HTML escape it, for a server that echoes a request inside them; longest
// first, so that a whole value shows as one mask. Where text was cut already (cut), a secret's
// start at its end is masked too.
func MaskSecrets(text []byte, secrets []string, min int, cut bool) []byte {
	secrets = slices.Clone(secrets)
	for _, sec := range slices.Clone(secrets) {
		if q, err := json.Marshal(sec); err == nil && string(q[1:len(q)-1]) != sec {
			secrets = append(secrets, string(q[1:len(q)-1]))
		}
		for _, esc := range []string{url.QueryEscape(sec), html.EscapeString(sec)} {
			if esc != sec {
				secrets = append(secrets, esc)
			}
		}
	}
	slices.SortFunc(secrets, func(a, b string) int { return len(b) - len(a) })
	for _, sec := range secrets {
		if len(sec) >= min {
			text = bytes.ReplaceAll(text, []byte(sec), []byte(config.Masked))
		}
	}
	if cut {
		for _, sec := range secrets {
			for k := len(sec) - 1; k >= 2 && len(sec) >= min; k-- {
				if bytes.HasSuffix(text, []byte(sec[:k])) {
					text = append(text[:len(text)-k:len(text)-k], config.Masked...)
					break
				}
			}
		}
	}
	return text
}

// statusText is an answer's status as errors show it: the code, its reason phrase where drainit
// knows one (http1.StatusText's fallback would repeat the code: "302 Status 302"), and for a
// redirect, that it was not followed.
func statusText(code int) string {
	s := strconv.Itoa(code)
	if t := http1.StatusText(code); t != "Status "+s {
		s += " " + t
	}
	if code >= 300 && code <= 399 {
		s += " (redirects are not followed)"
	}
	return s
}
