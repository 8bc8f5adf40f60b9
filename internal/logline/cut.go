package logline

import (
	"bytes"
	"encoding/json"
	"slices"
	"unicode/utf8"
)

// Mark is the field a cut line carries.
const Mark = `"truncated":true`

// Cut returns line, one JSON object and its newline as zerolog writes it (compact, valid UTF-8),
// when it is limit bytes or shorter. Otherwise it returns a line of at most limit bytes that is one
// JSON object with its newline and the field Mark: its longest string values (the message, an
// error, an argument) are shortened, longest first, each at a character or escape's boundary.
// Where that is not enough (a list of thousands of short strings), only the fields that say what
// happened (level, logger, time, phase, elapsed, hook, message) are kept, shortened the same
// way. A line that is no JSON object is cut at a character's boundary. Nothing is cut below what
// the mark and the form need: a limit under ~64 can give a longer line.
func Cut(line []byte, limit int) []byte {
	if len(line) <= limit {
		return line
	}
	body := bytes.TrimRight(line, "\n")
	if !json.Valid(body) || len(body) == 0 || body[0] != '{' {
		return append(runeCut(body, limit-1), '\n')
	}
	if out, ok := cutStrings(body, limit); ok {
		return out
	}
	if out, ok := cutStrings(keepOnly(body), limit); ok {
		return out
	}
	return []byte("{" + Mark + "}\n")
}

// cutStrings shortens the string values of obj, a compact JSON object, longest first, so that
// with Mark and a newline it takes limit bytes at most; false when even empty strings take more.
func cutStrings(obj []byte, limit int) ([]byte, bool) {
	end := bytes.LastIndexByte(obj, '}')
	if end < 0 {
		return nil, false
	}
	mark := "," + Mark
	if len(bytes.TrimSpace(obj[1:end])) == 0 {
		mark = Mark // an empty object
	}
	need := len(obj) + len(mark) + 1 - limit
	spans := stringValues(obj)
	order := make([]int, len(spans)) // spans' indices, longest first
	keep := make([]int, len(spans))  // how much of each span's text stays
	for i, s := range spans {
		order[i] = i
		keep[i] = s.len()
	}
	slices.SortStableFunc(order, func(a, b int) int { return spans[b].len() - spans[a].len() })
	for _, i := range order {
		if need <= 0 {
			break
		}
		s := spans[i]
		keep[i] = boundary(obj[s.from:s.to], s.len()-need)
		need -= s.len() - keep[i]
	}
	if need > 0 {
		return nil, false
	}
	out := make([]byte, 0, limit)
	at := 0
	for i, s := range spans {
		out = append(out, obj[at:s.from+keep[i]]...)
		at = s.to
	}
	out = append(out, obj[at:end]...)
	out = append(out, mark...)
	out = append(out, obj[end:]...)
	return append(out, '\n'), true
}

// span is where the text of a string value (between its quotes) is in a JSON text.
type span struct{ from, to int }

func (s span) len() int { return s.to - s.from }

// stringValues finds the string values of a compact JSON text, keys left out: outside a string
// such a text holds no quote, and within one a quote is escaped.
func stringValues(b []byte) []span {
	var out []span
	for i := 0; i < len(b); i++ {
		if b[i] != '"' {
			continue
		}
		j := i + 1
		for j < len(b) && b[j] != '"' {
			if b[j] == '\\' {
				j++
			}
			j++
		}
		if j+1 >= len(b) || b[j+1] != ':' {
			out = append(out, span{i + 1, j})
		}
		i = j
	}
	return out
}

// boundary is the longest prefix of s, the text of a JSON string, of at most n bytes that ends
// between two characters: never within an escape (\", \u00e9) or a character's UTF-8 bytes.
func boundary(s []byte, n int) int {
	at := 0
	for at < len(s) {
		step := 1
		switch {
		case s[at] == '\\' && at+1 < len(s) && s[at+1] == 'u':
			step = 6
		case s[at] == '\\':
			step = 2
		case s[at] >= utf8.RuneSelf:
			_, step = utf8.DecodeRune(s[at:])
		}
		if at+step > n {
			break
		}
		at += step
	}
	return at
}

// keepOnly is obj, a JSON object, with only the fields that say what happened, in this order.
func keepOnly(obj []byte) []byte {
	var fields map[string]json.RawMessage
	if json.Unmarshal(obj, &fields) != nil {
		return []byte("{}")
	}
	out := []byte{'{'}
	for _, k := range []string{"level", "logger", "time", "phase", "elapsed", "hook", "message"} {
		if v, ok := fields[k]; ok {
			if len(out) > 1 {
				out = append(out, ',')
			}
			out = append(append(out, `"`+k+`":`...), v...)
		}
	}
	return append(out, '}')
}

// runeCut is the longest prefix of b of at most n bytes that ends between two characters.
func runeCut(b []byte, n int) []byte {
	if n <= 0 {
		return nil
	}
	if len(b) <= n {
		return b
	}
	for n > 0 && !utf8.RuneStart(b[n]) {
		n--
	}
	return b[:n]
}
