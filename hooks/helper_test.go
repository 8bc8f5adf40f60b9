package hooks

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/drainit/drainit/internal/config"
)

// helper is the program exec hooks run in the tests. It runs in its own process, so it may use
// os/exec freely. Modes:
//
//	out CODE          "out one" on stdout, "err two" on stderr, a 5000-byte line, exit CODE
//	env NAME          print "env=<$NAME>" and "cwd=<working directory>"
//	sleep             print "ready <pid>", then sleep (until killed)
//	ignore-term       ignore SIGTERM, print "gc <pid>", then sleep (until SIGKILL)
//	tree              start ignore-term in the same process group, wait for it to say so,
//	                  print "child <pid>", then sleep; ignore-term's stderr is the hook's
//	quiet-tree        tree, but ignore-term holds nothing of the hook's output
//	leave             start sleep sharing stdout, print "leftover <pid>", exit 0
//	setsid-hold       start sleep in a session of its own sharing stdout, print "held <pid>"
//	                  and "ready <pid>", then sleep (SIGTERM ends it; the sleep keeps stdout)
//	http PROXY URL    with HTTP_PROXY=PROXY, run an HTTP hook POSTing to URL; exit 1 on error
//	flood N           N lines "line I" padded to 100 bytes on stdout, as fast as it can, exit 0
func helper(args []string) int {
	if len(args) == 0 {
		return 2
	}
	switch args[0] {
	case "out":
		fmt.Println("out one")
		fmt.Fprintln(os.Stderr, "err two")
		fmt.Println(strings.Repeat("y", 5000))
		code, _ := strconv.Atoi(args[1])
		return code
	case "env":
		wd, _ := os.Getwd()
		fmt.Printf("env=%s\ncwd=%s\n", os.Getenv(args[1]), wd)
		return 0
	case "sleep":
		fmt.Printf("ready %d\n", os.Getpid())
		time.Sleep(time.Hour)
		return 0
	case "ignore-term":
		signal.Ignore(syscall.SIGTERM)
		fmt.Printf("gc %d\n", os.Getpid())
		time.Sleep(time.Hour)
		return 0
	case "tree", "quiet-tree":
		r, w, err := os.Pipe()
		if err != nil {
			return 1
		}
		gc := exec.Command(os.Args[0], "hooks-helper", "ignore-term")
		gc.Stdout = w
		if args[0] == "tree" {
			gc.Stderr = os.Stderr
		}
		if err := gc.Start(); err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		w.Close()
		line := make([]byte, 64)
		n, _ := r.Read(line) // "gc <pid>": SIGTERM is ignored from now on
		fmt.Print(string(line[:n]))
		fmt.Printf("child %d\n", os.Getpid())
		time.Sleep(time.Hour)
		return 0
	case "leave":
		gc := exec.Command(os.Args[0], "hooks-helper", "sleep")
		gc.Stdout, gc.Stderr = os.Stdout, os.Stderr
		if err := gc.Start(); err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		fmt.Printf("leftover %d\n", gc.Process.Pid)
		return 0
	case "setsid-hold":
		gc := exec.Command(os.Args[0], "hooks-helper", "sleep")
		gc.Stdout, gc.SysProcAttr = os.Stdout, &syscall.SysProcAttr{Setsid: true}
		if err := gc.Start(); err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		// "leader", not "ready": the sleeping child prints "ready" itself, on the same output,
		// and may come first.
		fmt.Printf("held %d\nleader %d\n", gc.Process.Pid, os.Getpid())
		time.Sleep(time.Hour)
		return 0
	case "flood":
		n, _ := strconv.Atoi(args[1])
		w := bufio.NewWriter(os.Stdout)
		for i := range n {
			fmt.Fprintf(w, "%-99s\n", "line "+strconv.Itoa(i))
		}
		if w.Flush() != nil {
			return 1
		}
		return 0
	case "http":
		for _, k := range []string{"HTTP_PROXY", "http_proxy", "HTTPS_PROXY", "https_proxy"} {
			os.Setenv(k, args[1])
		}
		os.Unsetenv("NO_PROXY")
		os.Unsetenv("no_proxy")
		h, err := parseHTTP("proxied", "POST "+args[2])
		if err == nil {
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			err = h.Run(ctx)
			cancel()
		}
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		return 0
	}
	return 2
}

// parseExec, parseHTTP and parseProbe build a hook or probe from a spec as drainit's run does:
// read by package config, then made here.
func parseExec(name, spec string, children *Children) (Hook, error) {
	argv, err := config.ParseCommand(spec)
	if err != nil {
		return nil, err
	}
	return NewExec(name, argv, children), nil
}

func parseHTTP(name, spec string) (Hook, error) {
	c, err := config.ParseCall(spec)
	if err != nil {
		return nil, err
	}
	return NewHTTP(name, c), nil
}

func parseProbe(spec string) (Probe, error) {
	p, err := config.ParseProbe(spec)
	if err != nil {
		return nil, err
	}
	return NewProbe(p), nil
}
