package check

import (
	"math"
	"path"
	"strconv"
	"strings"
	"time"

	"github.com/drainit/drainit/internal/config"
)

// forever stands for `sleep infinity`: longer than any grace period.
const forever = time.Duration(math.MaxInt64)

// hookKind is what a preStop hook does, as far as the timing rules care.
type hookKind int

const (
	hookNone    hookKind = iota
	hookSleep            // waits a known time: the sleep action, sleep N, drainit sleep N
	hookDrainit          // asks drainit to drain: httpGet to its control server, drainit prestop
	hookOther            // anything else: its duration is unknown
)

// preStop is a preStop hook's timing.
type preStop struct {
	kind hookKind
	line int
	// min is how long the hook keeps the kubelet waiting, at least (a lower bound: a script
	// may do more than its sleeps); exact says it is also the most.
	min   time.Duration
	exact bool
	desc  string // how messages name the hook: "sleep action", `"sleep 10"`
	// shell is the program an exec hook runs when it needs a shell or coreutils ("sh",
	// "sleep"), for the distroless rule; "" otherwise.
	shell string
	// drainit hooks: the httpGet, or the address `drainit prestop --addr` was given.
	http *HTTPGet
	addr string
}

// shells are the programs an exec hook may start that a distroless or scratch image lacks.
var shells = map[string]bool{
	"sh": true, "bash": true, "ash": true, "dash": true, "zsh": true, "ksh": true,
	"sleep": true, "busybox": true,
}

// analyzePreStop works out what the container's preStop does and how long it takes. env
// resolves $VAR in shell scripts; dc says where drainit's control server listens, if drainit
// runs in the container.
func analyzePreStop(c *Container, env envMap, dc *drainitConf) preStop {
	h := c.PreStop
	if h == nil {
		return preStop{kind: hookNone}
	}
	ps := preStop{kind: hookOther, line: h.Line, desc: "the preStop hook"}
	switch {
	case h.IsSleep:
		d := seconds(h.Sleep)
		return preStop{kind: hookSleep, line: h.Line, min: d, exact: true, desc: "sleep action"}
	case h.IsExec:
		return analyzeExec(h, env, ps)
	case h.HTTP != nil:
		if dc != nil && dc.targets(h.HTTP, c.Ports) {
			ps.kind, ps.http = hookDrainit, h.HTTP
			ps.desc = "httpGet to drainit"
		}
	}
	return ps
}

func analyzeExec(h *Handler, env envMap, ps preStop) preStop {
	argv := h.Exec
	if len(argv) == 0 {
		return ps
	}
	prog := path.Base(argv[0])
	if shells[prog] {
		ps.shell = prog
	}
	if prog == "busybox" && len(argv) > 1 {
		argv = argv[1:]
		prog = path.Base(argv[0])
	}
	switch {
	case prog == "sleep":
		if d, ok := sleepArgs(argv[1:]); ok {
			ps.kind, ps.min, ps.exact = hookSleep, d, true
			ps.desc = quoteCmd(h.Exec)
		}
	case prog == "drainit" && len(argv) > 1 && argv[1] == "sleep":
		if d, ok := drainitSleep(argv[2:]); ok {
			ps.kind, ps.min, ps.exact = hookSleep, d, true
			ps.desc = quoteCmd(h.Exec)
		}
	case prog == "drainit" && len(argv) > 1 && argv[1] == "prestop":
		ps.kind, ps.desc = hookDrainit, quoteCmd(h.Exec)
		ps.addr, _ = flagValue(argv[2:], "addr")
	case shells[prog] && prog != "busybox":
		script, ok := shellScript(prog, argv[1:])
		if !ok {
			return ps
		}
		d, exact := scriptSleep(script, env)
		if d > 0 {
			ps.kind, ps.min, ps.exact = hookSleep, d, exact
			ps.desc = quoteCmd(h.Exec)
		}
	}
	return ps
}

// shellScript finds the script in a shell's arguments as the shells read them (POSIX sh's
// synopsis, bash's and dash's option parsing): -c may stand anywhere among the options, alone or
// in a cluster (-c, -ec, -xc), and the script is then the first operand, after the other options
// (-e, +x, -o pipefail, bash's --norc), a "--" or a "-" that ends them. No -c: the operand is a
// script file, which is not read. An option it does not know stops it: the script is then not
// understood, rather than guessed at.
func shellScript(prog string, args []string) (string, bool) {
	cmd := false
	for i := 0; i < len(args); i++ {
		a := args[i]
		switch {
		case a == "--" || a == "-":
			if cmd && i+1 < len(args) {
				return args[i+1], true
			}
			return "", false
		case prog == "bash" && bashLongNoArg(a):
		case prog == "bash" && (a == "--rcfile" || a == "--init-file"):
			i++ // the file
		case len(a) > 1 && (a[0] == '-' || a[0] == '+') && a[1] != '-':
			for _, f := range a[1:] {
				switch {
				case f == 'c' && a[0] == '-':
					cmd = true
				case f == 'o' || (f == 'O' && prog == "bash"):
					i++ // the option's name: -o pipefail, +o errexit
				case !strings.ContainsRune(shellFlags, f):
					return "", false
				}
			}
		default:
			if !cmd || a == "" {
				return "", false // a script file, or nothing to run
			}
			return a, true
		}
	}
	return "", false
}

// drainitSleep is how long `drainit sleep` sleeps with these arguments, as it reads them: one
// duration, or "--" and one.
func drainitSleep(args []string) (time.Duration, bool) {
	if len(args) == 2 && args[0] == "--" {
		args = args[1:]
	}
	if len(args) != 1 {
		return 0, false
	}
	d, err := config.ParseDuration(args[0])
	return d, err == nil
}

// shellFlags are the single-letter options of sh (POSIX set, plus -s and -l of bash, dash and
// busybox ash) that take no value and leave the script where it is.
const shellFlags = "abCefhilmnpsuvxEBHPT"

// bashLongNoArg says whether a is one of bash's long options that take no value.
func bashLongNoArg(a string) bool {
	switch a {
	case "--norc", "--noprofile", "--login", "--posix", "--noediting", "--restricted", "--verbose":
		return true
	}
	return false
}

// scriptSleep estimates how long a shell script runs: the sum of its top-level sleeps. It is a
// lower bound; exact says the script does nothing else that takes time. Sleeps that may not run
// are not counted: inside loops and conditionals, after a || or after a && behind a command that
// may fail, after an exit or exec that may end the script; nor those sent to the background. The
// sides of a pipe run at once: a pipeline takes its longest sleep.
func scriptSleep(script string, env envMap) (total time.Duration, exact bool) {
	exact = true
	depth := 0
	var (
		cond     bool          // the command may not run: behind a || or a && that may fail
		succeeds bool          // the previous command is one known to succeed (sleep, true, echo)
		piped    time.Duration // what the current pipeline has added to total
	)
	for _, cmd := range shellCommands(script) {
		switch cmd.op {
		case "&&":
			cond = cond || !succeeds
		case "||":
			if succeeds && !cond {
				continue // never runs: sleep 3 || true
			}
			cond = true
		case "|":
		default:
			cond = false
		}
		if cmd.op != "|" {
			piped = 0
		}
		words := plainWords(cmd.words)
		execs := false
		for len(words) > 0 && (words[0] == "exec" || words[0] == "command" || path.Base(words[0]) == "busybox") {
			execs = execs || words[0] == "exec"
			words = words[1:]
		}
		if len(words) == 0 {
			succeeds = true
			continue
		}
		unsure := depth > 0 || cond || cmd.background // it may not run, or not delay
		succeeds = false
		switch words[0] {
		case "while", "until", "for", "if", "case", "select":
			depth++
			exact = false
			continue
		case "done", "fi", "esac":
			depth = max(depth-1, 0)
			continue
		case "do", "then", "else", "elif", "in":
			continue
		case "true", ":", "echo", "printf":
			succeeds = true
			continue
		case "exit":
			// Here the script ends, or may: what follows may not run.
			return total, exact && !unsure
		}
		prog := path.Base(words[0])
		var d time.Duration
		ok := false
		switch {
		case prog == "sleep":
			d, ok = sleepArgs(env.expandShell(words[1:]))
		case prog == "drainit" && len(words) > 1 && words[1] == "sleep":
			d, ok = drainitSleep(env.expandShell(words[2:]))
		}
		switch {
		case !ok || unsure:
			exact = false
		case cmd.op == "|":
			// Beside the pipeline's other commands, not after them.
			total = config.AddDur(total, max(d-piped, 0))
			piped = max(piped, d)
		default:
			total = config.AddDur(total, d)
			piped = d
		}
		succeeds = ok
		if execs {
			// The script ends here, or may (exact is false then, as for what exec runs whose
			// time is not known).
			return total, exact
		}
	}
	return total, exact
}

// plainWords is a command's words without its redirections (2>&1, >/dev/null, > file).
func plainWords(words []string) []string {
	out := words[:0:0]
	for i := 0; i < len(words); i++ {
		target, ok := redirection(words[i])
		if !ok {
			out = append(out, words[i])
		} else if target == "" {
			i++ // the operator alone: its target is the next word
		}
	}
	return out
}

// redirection says whether a word is a redirection (an optional descriptor number, then >, >>,
// <, <>, >&, <&, >|, or bash's &> and &>>), and its target, "" when the next word holds it.
func redirection(w string) (target string, ok bool) {
	rest := strings.TrimLeft(w, "0123456789")
	if strings.HasPrefix(rest, "&>") && len(rest) == len(w) {
		rest = rest[1:]
	}
	for _, op := range []string{">>", ">&", "<&", "<>", ">|", ">", "<"} {
		if t, found := strings.CutPrefix(rest, op); found {
			return t, true
		}
	}
	return "", false
}

// shellCommand is one simple command of a script: its words, unquoted, whether it ends in a
// lone & (runs in the background), and the operator before it: "" (the first), ";" (or a
// newline, a brace or parenthesis), "&&", "||" or "|".
type shellCommand struct {
	words      []string
	background bool
	op         string
}

// shellCommands splits a script into simple commands at ; & && | || and newlines, honouring
// quotes; the & of a redirection (2>&1, &>) stays in its word. It is not a shell parser: enough
// to find the sleeps in a one-line preStop.
func shellCommands(script string) []shellCommand {
	var (
		cmds  []shellCommand
		words []string
		word  strings.Builder
		inW   bool
		quote rune
		op    string // the operator before the command being read
	)
	endWord := func() {
		if inW {
			words = append(words, word.String())
			word.Reset()
			inW = false
		}
	}
	var groups []int // where each open ( or { began, in cmds
	group := -1      // where the group just closed began, while nothing follows it
	endCmd := func(bg bool, next string) {
		endWord()
		switch {
		case len(words) > 0:
			cmds = append(cmds, shellCommand{words: words, background: bg, op: op})
			group = -1
		case bg && group >= 0:
			// ( sleep 5 ) &: the whole group runs in the background.
			for j := group; j < len(cmds); j++ {
				cmds[j].background = true
			}
		case op != "" && op != ";":
			// No command between: "a && ( b )", "a &&\n b": b still follows the &&.
			words = nil
			return
		}
		words, op = nil, next
	}
	// inRedirect says whether the word so far ends in > or <, so that an & extends it (2>&1).
	inRedirect := func() bool {
		w := word.String()
		return inW && w != "" && (w[len(w)-1] == '>' || w[len(w)-1] == '<')
	}
	rs := []rune(script)
	for i := 0; i < len(rs); i++ {
		c := rs[i]
		switch {
		case quote != 0:
			if c == quote {
				quote = 0
			} else {
				word.WriteRune(c)
			}
		case c == '\'' || c == '"':
			quote, inW = c, true
		case c == '$' && i+1 < len(rs) && (rs[i+1] == '{' || rs[i+1] == '('):
			// ${VAR} and $(cmd) stay in the word; a brace or parenthesis inside does not end
			// the command.
			closer := map[rune]rune{'{': '}', '(': ')'}[rs[i+1]]
			for ; i < len(rs); i++ {
				word.WriteRune(rs[i])
				if rs[i] == closer {
					break
				}
			}
			inW = true
		case c == '\\' && i+1 < len(rs):
			i++
			if rs[i] != '\n' {
				word.WriteRune(rs[i])
				inW = true
			}
		case c == '&' && (inRedirect() || (!inW && i+1 < len(rs) && rs[i+1] == '>')):
			word.WriteRune(c) // 2>&1, or bash's &>file
			inW = true
		case c == '&':
			if i+1 < len(rs) && rs[i+1] == '&' {
				i++
				endCmd(false, "&&")
			} else {
				endCmd(true, ";")
			}
		case c == '|' && inRedirect():
			word.WriteRune(c) // >| file
		case c == '|':
			next := "|"
			if i+1 < len(rs) && rs[i+1] == '|' {
				i++
				next = "||"
			}
			endCmd(false, next)
		case c == '(' || c == '{':
			endCmd(false, ";")
			groups = append(groups, len(cmds))
		case c == ')' || c == '}':
			endCmd(false, ";")
			if n := len(groups); n > 0 {
				group, groups = groups[n-1], groups[:n-1]
			}
		case c == ';' || c == '\n':
			endCmd(false, ";")
		case c == ' ' || c == '\t' || c == '\r':
			endWord()
		case c == '#' && !inW:
			for i+1 < len(rs) && rs[i+1] != '\n' {
				i++
			}
		default:
			word.WriteRune(c)
			inW = true
		}
	}
	endCmd(false, "")
	return cmds
}

// sleepArgs reads sleep(1)'s operands as GNU coreutils and busybox do: after an optional "--"
// (the end of options to both), each a number with an optional unit s, m, h or d, summed;
// "infinity" or "inf", in any case, sleeps forever.
func sleepArgs(args []string) (time.Duration, bool) {
	if len(args) > 0 && args[0] == "--" {
		args = args[1:]
	}
	if len(args) == 0 {
		return 0, false
	}
	var total time.Duration
	for _, a := range args {
		if strings.EqualFold(a, "infinity") || strings.EqualFold(a, "inf") {
			return forever, true
		}
		unit := time.Second
		num := a
		if n := len(a); n > 0 {
			switch a[n-1] {
			case 's':
				num = a[:n-1]
			case 'm':
				unit, num = time.Minute, a[:n-1]
			case 'h':
				unit, num = time.Hour, a[:n-1]
			case 'd':
				unit, num = 24*time.Hour, a[:n-1]
			}
		}
		f, err := strconv.ParseFloat(num, 64)
		if err != nil || f < 0 || math.IsNaN(f) || math.IsInf(f, 0) {
			return 0, false
		}
		if f*float64(unit) >= float64(forever) {
			return forever, true
		}
		total = config.AddDur(total, time.Duration(f*float64(unit)))
	}
	return total, true
}

// quoteCmd shows a command as the manifest gives it, shortened when long.
func quoteCmd(argv []string) string {
	s := strings.Join(argv, " ")
	if r := []rune(s); len(r) > 60 {
		s = string(r[:60]) + "…"
	}
	return strconv.Quote(s)
}

// flagValue finds --name / -name, with =value or the next word as its value, among Go-style
// flags that end at "--" or the first non-flag word: how `drainit prestop` reads its flags,
// every one of which takes a value.
func flagValue(args []string, name string) (string, bool) {
	val, found := "", false
	for i := 0; i < len(args); i++ {
		a := args[i]
		if a == "--" || a == "-" || !strings.HasPrefix(a, "-") {
			break
		}
		n, v, hasVal := strings.Cut(strings.TrimLeft(a, "-"), "=")
		if !hasVal {
			if i+1 >= len(args) {
				break
			}
			i++
			v = args[i]
		}
		if n == name {
			val, found = v, true // the last one wins, as with the flag package
		}
	}
	return val, found
}
