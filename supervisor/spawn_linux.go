package supervisor

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"

	"golang.org/x/sys/unix"

	"github.com/drainit/drainit/internal/config"
	"github.com/drainit/drainit/internal/execerr"
	"github.com/drainit/drainit/internal/startsig"
)

// StartError is the app failing to start. Code is what drainit exits with: 127 when the command
// is not found, 126 when it is found but cannot be executed, as a shell would.
type StartError struct {
	Command string
	Code    int
	Err     error
}

func (e *StartError) Error() string { return fmt.Sprintf("cannot start app %q: %v", e.Command, e.Err) }

func (e *StartError) Unwrap() error { return e.Err }

// resolve finds the program to execute: a name with a slash is used as it is, any other is
// searched in PATH. A file that exists but is not executable is reported as such (126) rather than
// as not found, unless an executable one comes later in PATH.
func resolve(name string) (string, error) {
	if name == "" {
		return "", &StartError{name, 127, errors.New("empty command")}
	}
	if strings.Contains(name, "/") {
		return name, nil
	}
	var denied string
	for dir := range strings.SplitSeq(os.Getenv("PATH"), ":") {
		if dir == "" {
			dir = "."
		}
		p := filepath.Join(dir, name)
		var st unix.Stat_t
		if unix.Stat(p, &st) != nil || st.Mode&unix.S_IFMT == unix.S_IFDIR {
			continue
		}
		if unix.Access(p, unix.X_OK) == nil {
			return p, nil
		}
		if denied == "" {
			denied = p
		}
	}
	if denied != "" {
		return "", &StartError{name, 126, fmt.Errorf("%s: permission denied", denied)}
	}
	return "", &StartError{name, 127, errors.New("not found in PATH")}
}

// spawn starts the app with drainit's environment, working directory and standard streams (the
// app writes to them directly; nothing is piped through drainit).
//
// The app gets its own process group so that signals reach everything it starts: with a
// controlling terminal the group becomes the terminal's foreground group (Ctrl-C and Ctrl-Z reach
// the app, as under a shell); without one the app gets its own session, as dumb-init does.
//
// syscall.ForkExec is used rather than os.StartProcess: os.StartProcess probes for pidfd support
// on its first call and hands back an *os.Process whose Wait would race drainit's reaper.
// golang.org/x/sys/unix has no fork+exec of its own.
func spawn(argv []string, foreground bool) (int, error) {
	path, err := resolve(argv[0])
	if err != nil {
		return 0, err
	}
	attr := &syscall.SysProcAttr{Setsid: true}
	if foreground {
		attr = &syscall.SysProcAttr{Setpgid: true, Foreground: true, Ctty: 0}
	}
	// The app gets the signal mask drainit started with, as exec would give it (and tini
	// does): startsig.StartInherited. The exec hooks are started with none blocked instead
	// (startsig.StartUnblocked).
	start := func(env []string) (int, error) {
		return startsig.StartInherited(func() (int, error) {
			return syscall.ForkExec(path, argv, &syscall.ProcAttr{Env: env, Files: []uintptr{0, 1, 2}, Sys: attr})
		})
	}
	env := os.Environ()
	pid, err := start(env)
	if errors.Is(err, unix.E2BIG) {
		// The marker naming this drainit (config.SupervisorEnv) may be what took the app's
		// arguments and environment past the kernel's limit: without it the app starts as it
		// would without drainit; only a drainit below it cannot tell it is nested.
		if rest := slices.DeleteFunc(slices.Clone(env), isMarker); len(rest) < len(env) {
			pid, err = start(rest)
		}
	}
	if err != nil {
		code, err := execerr.Explain(path, err)
		return 0, &StartError{argv[0], code, err}
	}
	return pid, nil
}

// isMarker says whether an environment entry is the marker naming drainit to a drainit below it.
func isMarker(kv string) bool { return strings.HasPrefix(kv, config.SupervisorEnv+"=") }
