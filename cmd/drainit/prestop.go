package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/drainit/drainit/hooks"
	"github.com/drainit/drainit/internal/config"
	"github.com/drainit/drainit/internal/control"
	"github.com/drainit/drainit/internal/http1"
	"github.com/drainit/drainit/internal/logline"
)

// prestopCmd is `drainit prestop`: the exec form of the preStop hook. It asks the drainit running
// in this container to drain and returns when the drain is done: 0, or 1 with a message (the
// kubelet then records FailedPreStopHook), 2 for bad usage.
func prestopCmd(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("drainit prestop", flag.ContinueOnError)
	fs.SetOutput(io.Discard) // a mistake is one line (below): it ends up in a pod event
	// No default from the environment in the flags themselves: the flag package prints defaults
	// with the usage, on --help and on any mistyped flag, and a preStop hook's output ends up in
	// the pod's events, readable by whoever may list events: the token must never be one.
	addr := fs.String("addr", "", "the control server's address (default: from DRAINIT_HTTP_ADDR, else 127.0.0.1:8099)")
	token := fs.String("token", "", "bearer token (default: DRAINIT_HTTP_TOKEN)")
	timeout := fs.String("timeout", "0", "give up after this long (0: never; the kubelet bounds the hook by the grace period)")
	help := config.HelpFlag(fs)
	err := fs.Parse(args)
	if err == nil && *help {
		fs.SetOutput(stdout)
		fs.Usage()
		return 0
	}
	if err != nil {
		var names []string
		fs.VisitAll(func(f *flag.Flag) { names = append(names, f.Name) })
		fmt.Fprintf(stderr, "drainit prestop: %v\n", config.FlagError(err, names, "drainit prestop --help"))
		return 2
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "drainit prestop: unexpected argument %q\n", fs.Arg(0))
		return 2
	}
	given := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { given[f.Name] = true })
	if !given["addr"] {
		*addr = defaultControlAddr(os.Getenv(config.EnvPrefix + "HTTP_ADDR"))
	}
	// The token as drainit itself reads it (config.CleanToken), so that a token with a file's
	// last newline, which drainit trims at start, is trimmed here too, and one drainit refuses is
	// refused here.
	tokenName := "--token"
	if !given["token"] {
		tokenName = config.EnvPrefix + "HTTP_TOKEN"
		*token = os.Getenv(tokenName)
	}
	tok, trimmed, err := config.CleanToken(*token)
	if err != nil {
		fmt.Fprintf(stderr, "drainit prestop: %s: %v\n", tokenName, err)
		return 2
	}
	if trimmed {
		fmt.Fprintf(stderr, "drainit prestop: %s: the whitespace around the token is not part of it, as drainit reads it\n", tokenName)
	}
	d, err := config.ParseDuration(*timeout)
	if err != nil {
		fmt.Fprintf(stderr, "drainit prestop: --timeout %q: %v\n", *timeout, err)
		return 2
	}
	ctx := context.Background()
	if d > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, d)
		defer cancel()
	}
	call := http1.Call{Method: "POST", URL: "http://" + *addr + "/prestop"}
	if err = checkDialAddr(*addr); err == nil {
		_, err = config.CheckURL(call.URL)
	}
	if err != nil {
		fmt.Fprintf(stderr, "drainit prestop: --addr %q: %v\n", *addr, err)
		return 2
	}
	// drainit's control server takes a call with this User-Agent for the kubelet's (see
	// control.FromKubelet).
	call.Header = map[string]string{"User-Agent": control.PrestopUserAgent}
	if tok != "" {
		call.Header["Authorization"] = "Bearer " + tok
	}
	start := time.Now()
	res, err := http1.Do(ctx, call)
	if err != nil {
		fmt.Fprintf(stderr, "drainit prestop: %s\n", hideToken([]byte(err.Error()), tok, false))
		return 1
	}
	// The answer is the server's, shown as text: with its control characters escaped, so that
	// it can neither drive the terminal nor forge lines of the hook's output.
	if res.Status != 200 {
		body := hideToken(res.Body, tok, len(res.Body) >= http1.MaxBodyBytes)
		fmt.Fprintf(stderr, "drainit prestop: status %d: %s\n", res.Status, logline.Escape(strings.TrimSpace(body)))
		return 1
	}
	body := logline.Escape(strings.TrimSpace(string(res.Body)))
	fmt.Fprintf(stdout, "drained after %s: %s\n", time.Since(start).Round(time.Millisecond), body)
	return 0
}

// hideToken masks the token in what a server answered (cut: the answer was cut short), as HTTP
// hooks mask their secrets: one that echoes the request (an --addr that is not drainit's control
// server) would put it in the hook's output, which the kubelet makes a pod event, readable by
// more people than the Secret it comes from. A token of any length is masked.
func hideToken(msg []byte, tok string, cut bool) string {
	if tok == "" {
		return string(msg)
	}
	return string(hooks.MaskSecrets(msg, []string{tok}, 1, cut))
}

// checkDialAddr refuses an --addr that is not HOST:PORT: it is pasted into a URL, where a "/",
// "?" or "#" would change the path the call goes to.
func checkDialAddr(addr string) error {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return errors.New("want HOST:PORT")
	}
	if n, err := strconv.Atoi(port); err != nil || n < 1 || n > 65535 {
		return fmt.Errorf("bad port %q", port)
	}
	if host == "" || strings.ContainsAny(host, "/?#@ %\\") {
		return errors.New("want HOST:PORT")
	}
	return nil
}

// defaultControlAddr turns the server's listen address into one to dial: ":8099" and
// "0.0.0.0:8099" mean this host, so 127.0.0.1.
func defaultControlAddr(listen string) string {
	if listen == "" {
		return "127.0.0.1:8099"
	}
	host, port, err := net.SplitHostPort(listen)
	if err != nil {
		return listen
	}
	switch host {
	case "", "0.0.0.0":
		host = "127.0.0.1"
	case "::":
		host = "::1"
	}
	return net.JoinHostPort(host, port)
}
