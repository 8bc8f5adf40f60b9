package check

import (
	"strings"

	"github.com/drainit/drainit/internal/config"
)

// envMap is a container's environment, by name; the last entry of a name wins, as in the
// kubelet.
type envMap struct {
	vars    map[string]EnvVar
	envFrom bool
}

func newEnvMap(c *Container) envMap {
	m := envMap{vars: map[string]EnvVar{}, envFrom: c.EnvFrom}
	for _, v := range c.Env {
		m.vars[v.Name] = v
	}
	return m
}

// lookup returns the variable; ok is false when it is not in env (it may still come from
// envFrom, which the caller checks with m.envFrom).
func (m envMap) lookup(name string) (EnvVar, bool) {
	v, ok := m.vars[name]
	return v, ok
}

// expandShell replaces $NAME and ${NAME} with the values env gives them, as the shell of an exec
// hook would (it inherits the container's environment). Unknown names, and anything fancier
// (${NAME:-default}), stay as written.
func (m envMap) expandShell(words []string) []string {
	out := make([]string, len(words))
	for i, w := range words {
		out[i] = m.expandShellWord(w)
	}
	return out
}

func (m envMap) expandShellWord(w string) string {
	return m.expandShellVars(w, false)
}

func isNameByte(c byte, first bool) bool {
	return c == '_' || (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (!first && c >= '0' && c <= '9')
}

func isName(s string) bool {
	for i := 0; i < len(s); i++ {
		if !isNameByte(s[i], i == 0) {
			return false
		}
	}
	return s != ""
}

// expandK8s replaces $(NAME) in a container's command and args as the kubelet does: defined
// names are replaced, $$ is a literal $, anything else stays as written. With unseen, for
// reading drainit's own settings, a $(NAME) whose value the manifest does not show (a Secret, a
// ConfigMap, a field; or any name not listed while envFrom is set) becomes config.Unseen
// instead, so that drainit's parser skips the value rather than refusing the reference's text.
func (m envMap) expandK8s(s string, unseen bool) string {
	if !strings.Contains(s, "$") {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] != '$' || i+1 >= len(s) {
			b.WriteByte(s[i])
			continue
		}
		switch s[i+1] {
		case '$':
			b.WriteByte('$')
			i++
			continue
		case '(':
			if end := strings.IndexByte(s[i+2:], ')'); end >= 0 {
				v, ok := m.vars[s[i+2:i+2+end]]
				switch {
				case ok && v.Known:
					b.WriteString(v.Value)
				case unseen && (ok || m.envFrom):
					b.WriteString(config.Unseen)
				default:
					// Not defined, or its value not shown: the kubelet leaves it as written.
					b.WriteString(s[i : i+3+end])
				}
				i += 2 + end
				continue
			}
		}
		b.WriteByte('$')
	}
	return b.String()
}

// word is one element of a container's command line, after $(VAR) expansion, with its line.
type word struct {
	s    string
	line int
}

// argv returns the container's command and args as the kubelet passes them (when command is
// unset, only the args are known: the image's ENTRYPOINT comes first), expanded by expandK8s.
func argv(c *Container, env envMap, unseen bool) []word {
	var out []word
	for i, s := range c.Command {
		out = append(out, word{env.expandK8s(s, unseen), c.CommandLines[i]})
	}
	for i, s := range c.Args {
		out = append(out, word{env.expandK8s(s, unseen), c.ArgsLines[i]})
	}
	return out
}

// expandShellUnseen expands a shell word's $NAME and ${NAME} from the container's environment,
// for reading drainit's settings out of a script: every other expansion ($UNKNOWN, ${X:-d},
// $(cmd), $1, "$@") is a value the manifest does not show, and becomes config.Unseen.
func (m envMap) expandShellUnseen(w string) string {
	return m.expandShellVars(w, true)
}

// expandShellVars is expandShellWord, or with unseen expandShellUnseen: a $NAME or ${NAME}
// the environment gives is replaced by its value; any other expansion stays as written, or
// with unseen becomes config.Unseen. A $ that starts no expansion is a literal $.
func (m envMap) expandShellVars(w string, unseen bool) string {
	if !strings.Contains(w, "$") {
		return w
	}
	var b strings.Builder
	for i := 0; i < len(w); i++ {
		if w[i] != '$' || i+1 >= len(w) {
			b.WriteByte(w[i])
			continue
		}
		name, end := "", -1
		switch c := w[i+1]; {
		case c == '{':
			if j := strings.IndexByte(w[i+2:], '}'); j >= 0 {
				name, end = w[i+2:i+2+j], i+3+j
			}
		case c == '(':
			if j := strings.IndexByte(w[i+2:], ')'); j >= 0 {
				end = i + 3 + j
			}
		case isNameByte(c, true):
			j := i + 1
			for j < len(w) && isNameByte(w[j], j == i+1) {
				j++
			}
			name, end = w[i+1:j], j
		case c >= '0' && c <= '9' || strings.IndexByte("@*#?$!-", c) >= 0:
			end = i + 2
		}
		v, ok := m.vars[name]
		switch {
		case end >= 0 && ok && v.Known && isName(name):
			b.WriteString(v.Value)
		case end >= 0 && unseen:
			b.WriteString(config.Unseen)
		default:
			b.WriteByte('$') // left as written, or not an expansion: a literal $
			continue
		}
		i = end - 1
	}
	return b.String()
}
