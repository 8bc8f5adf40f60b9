package check

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/drainit/drainit/internal/config"
)

// Reading nginx configuration, as far as its shutdown goes: the main-context directive
// worker_shutdown_timeout (https://nginx.org/en/docs/ngx_core_module.html#worker_shutdown_timeout;
// "Default: —", context main, nginx 1.11.11+). It is allowed only in the main context: in http{}
// or a conf.d file nginx refuses to start ("directive is not allowed here").

// nginxMain is what a configuration text says in its main context about the shutdown timeout.
type nginxMain struct {
	value   string // worker_shutdown_timeout's argument as written ("" when absent)
	line    int    // its line; the text's first line when the line is not known exactly
	set     bool   // the directive is there
	args    int    // how many arguments it has (nginx wants exactly one)
	include bool   // the main context includes other files: the directive may be in one
	bad     bool   // the text is not a configuration nginx would load (unbalanced braces, quotes)
}

// scanNginx reads an nginx configuration's main context. first is the line the text starts on;
// when exact is false the text's own lines are not the file's, and every line is first.
func scanNginx(text string, first int, exact bool) nginxMain {
	var (
		out   nginxMain
		words []string
		wline int
		depth int
		word  strings.Builder
		inW   bool
		line  = 0 // lines of text passed
	)
	at := func() int {
		if exact {
			return first + line
		}
		return first
	}
	endWord := func() {
		if inW {
			if len(words) == 0 {
				wline = at()
			}
			words = append(words, word.String())
			word.Reset()
			inW = false
		}
	}
	for i := 0; i < len(text); i++ {
		c := text[i]
		switch {
		case c == '\n':
			endWord()
			line++
		case c == ' ' || c == '\t' || c == '\r':
			endWord()
		case c == '#' && !inW:
			for i+1 < len(text) && text[i+1] != '\n' {
				i++
			}
		case c == '"' || c == '\'':
			q := c
			inW = true
			for i++; ; i++ {
				if i >= len(text) {
					out.bad = true
					return out
				}
				if text[i] == '\\' && i+1 < len(text) {
					i++
				} else if text[i] == q {
					break
				}
				if text[i] == '\n' {
					line++
				}
				word.WriteByte(text[i])
			}
		case c == ';' || c == '{' || c == '}':
			endWord()
			if depth == 0 && len(words) > 0 && c != '}' {
				switch words[0] {
				case "worker_shutdown_timeout":
					if c == ';' {
						out.set, out.line, out.args = true, wline, len(words)-1
						if len(words) > 1 {
							out.value = words[1]
						}
					}
				case "include":
					out.include = true
				}
			}
			switch c {
			case '{':
				depth++
			case '}':
				if depth == 0 || len(words) > 0 {
					out.bad = true
					return out
				}
				depth--
			}
			words = words[:0]
		case c == '$' && i+1 < len(text) && text[i+1] == '{':
			// ${name} is a variable, its braces no block.
			for ; i < len(text) && text[i] != '}' && text[i] != '\n'; i++ {
				word.WriteByte(text[i])
			}
			if i < len(text) && text[i] == '}' {
				word.WriteByte('}')
			} else {
				i--
			}
			inW = true
		case c == '\\' && i+1 < len(text):
			i++
			word.WriteByte(text[i])
			inW = true
		default:
			word.WriteByte(c)
			inW = true
		}
	}
	endWord()
	if depth != 0 || len(words) > 0 {
		out.bad = true
	}
	if !out.set {
		out.line = first
	}
	return out
}

// parseNginxTime reads a time as nginx does for a milliseconds setting (ngx_parse_time): one or
// more number-unit groups in decreasing order, units y M w d h m s ms, each at most once, spaces
// allowed between groups; a trailing number without a unit is seconds ("30" is 30s).
func parseNginxTime(s string) (time.Duration, error) {
	units := []struct {
		name string
		d    time.Duration
	}{
		{"y", 365 * 24 * time.Hour}, {"M", 30 * 24 * time.Hour}, {"w", 7 * 24 * time.Hour}, {"d", 24 * time.Hour},
		{"h", time.Hour}, {"ms", time.Millisecond}, {"m", time.Minute}, {"s", time.Second}, // ms before m: by prefix
	}
	if s == "" {
		return 0, fmt.Errorf("empty time")
	}
	var total, last time.Duration // last: the unit before, 0 for none; each must be smaller
	rest := s
	for rest != "" {
		j := 0
		for j < len(rest) && rest[j] >= '0' && rest[j] <= '9' {
			j++
		}
		if j == 0 {
			return 0, fmt.Errorf("not an nginx time (like 30s, 1m30s or 500ms)")
		}
		n, err := strconv.ParseInt(rest[:j], 10, 64)
		if err != nil {
			return 0, fmt.Errorf("not an nginx time: %w", err)
		}
		rest = rest[j:]
		if rest == "" {
			// A bare number at the end is seconds, after any larger unit.
			if last != 0 && last <= time.Second {
				return 0, fmt.Errorf("not an nginx time (units out of order)")
			}
			return config.AddDur(total, scaleDur(n, time.Second)), nil
		}
		var u time.Duration
		name := ""
		for _, un := range units {
			if strings.HasPrefix(rest, un.name) {
				u, name = un.d, un.name
				break
			}
		}
		if name == "" || last != 0 && u >= last {
			return 0, fmt.Errorf("not an nginx time (units y M w d h m s ms, largest first, each once)")
		}
		last = u
		total = config.AddDur(total, scaleDur(n, u))
		rest = strings.TrimLeft(rest[len(name):], " ")
	}
	return total, nil
}

// scaleDur is n×u, forever when that overflows.
func scaleDur(n int64, u time.Duration) time.Duration {
	if n > int64(forever/u) {
		return forever
	}
	return time.Duration(n) * u
}
