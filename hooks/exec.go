package hooks

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync"

	"github.com/rs/zerolog"
)

// ParseExec reads an exec hook's command, given either as a JSON array of strings
// (["/bin/deregister","--id","x"]) or as words separated by white space (/bin/deregister --id x).
// The plain form is not a shell: quotes and backslashes are refused rather than taken literally
// (use the JSON form, or ["sh","-c","…"]). A command without a slash is looked up in PATH when the
// hook runs; the hook inherits drainit's environment and working directory.
//
// children starts the hook's process and learns its exit from the program's reaper (see the
// package doc). With nil children, Run fails at once and starts nothing: a hook parsed only to
// check a configuration needs none.
func ParseExec(name, spec string, children *Children) (Hook, error) {
	argv, err := parseArgv(spec)
	if err != nil {
		return nil, fmt.Errorf("exec hook %q: %w", name, err)
	}
	return &execHook{name: name, argv: argv, children: children}, nil
}

func parseArgv(spec string) ([]string, error) {
	s := strings.TrimSpace(spec)
	var argv []string
	if strings.HasPrefix(s, "[") {
		if err := json.Unmarshal([]byte(s), &argv); err != nil {
			return nil, fmt.Errorf("command %q is not a JSON array of strings: %w", spec, err)
		}
	} else {
		if strings.ContainsAny(s, `'"\`) {
			return nil, fmt.Errorf("command %q: quotes and backslashes are not interpreted (no shell here); give the command as a JSON array", spec)
		}
		argv = strings.Fields(s)
	}
	if len(argv) == 0 || argv[0] == "" {
		return nil, errors.New("empty command")
	}
	for _, a := range argv {
		if strings.IndexByte(a, 0) >= 0 {
			return nil, fmt.Errorf("command %q: NUL byte in an argument", spec)
		}
	}
	return argv, nil
}

// maxLine bounds one line of a hook's output.
const maxLine = 4096

// maxOutput bounds what one run of a hook writes to drainit's log, both streams together, each
// line counted with lineCost for the log event around it. The log is drainit's, and the stop
// sequence writes its own lines to it: a hook that floods its output (a loop, `set -x` in a big
// script, `yes`) behind a log reader that falls behind made the stop sequence wait its turn on
// the same pipe (seen: `yes` as an offline hook, with a reader taking 640 KB/s: its 3 s timeout
// ended at +5.4 s, the stop signal 2.4 s late; its first 64 KiB of output were 32,768 events,
// 4 MB of log). Past the budget the output is still read, so that the hook never blocks on it,
// and counted, not logged: at most about 128 KiB of log a run, 0.2 s of that reader.
const maxOutput = 128 << 10

// lineCost is what a line costs the budget beyond its bytes: its log event's fields and time.
const lineCost = 128

// outputBudget is what is left of maxOutput for one run of a hook, and what was not logged.
type outputBudget struct {
	mu           sync.Mutex
	left         int
	lines, bytes int // not logged
	warned       bool
}

// take says whether a line of n bytes is logged, and whether this is the first line that is
// not (for one warning at that moment).
func (b *outputBudget) take(n int) (log, first bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if n+lineCost <= b.left {
		b.left -= n + lineCost
		return true, false
	}
	b.left = 0 // a long line over the rest does not let a shorter one after it through
	b.lines++
	b.bytes += n
	first = !b.warned
	b.warned = true
	return false, first
}

// dropped is how many lines, of how many bytes, were not logged.
func (b *outputBudget) dropped() (lines, bytes int) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.lines, b.bytes
}

// logOutput logs the lines of a hook run's stdout and stderr, tagged with the hook's name, until
// both end or fail, within maxOutput; then it warns of what it did not log.
func logOutput(log *zerolog.Logger, hook string, stdout, stderr io.Reader) {
	var wg sync.WaitGroup
	budget := &outputBudget{left: maxOutput}
	for i, stream := range [2]string{"stdout", "stderr"} {
		r := [2]io.Reader{stdout, stderr}[i]
		wg.Go(func() {
			copyLines(r, func(line []byte) {
				ok, first := budget.take(len(line))
				if ok {
					log.Info().Str("hook", hook).Str("stream", stream).Msg(string(line))
				} else if first {
					log.Warn().Str("hook", hook).Int("limit_bytes", maxOutput).
						Msg("the hook's output is over drainit's limit: the rest is read and not logged")
				}
			})
		})
	}
	wg.Wait()
	if n, size := budget.dropped(); n > 0 {
		log.Warn().Str("hook", hook).Int("lines", n).Int("bytes", size).Msg("hook output not logged")
	}
}

// execHook runs a command; see Run in exec_linux.go.
type execHook struct {
	name     string
	argv     []string
	children *Children
}

func (h *execHook) Name() string { return h.name }

// copyLines calls emit with each line read from r, without its end of line, until r fails or
// ends. A line longer than maxLine comes in pieces of maxLine bytes, so that a hook cannot make
// drainit hold an unbounded line. Empty lines are dropped: they carry nothing in a log.
func copyLines(r io.Reader, emit func(line []byte)) {
	br := bufio.NewReaderSize(r, maxLine)
	for {
		line, err := br.ReadSlice('\n')
		line = bytes.TrimSuffix(bytes.TrimSuffix(line, []byte("\n")), []byte("\r"))
		if len(line) > 0 {
			emit(line)
		}
		if err != nil && err != bufio.ErrBufferFull {
			return
		}
	}
}
