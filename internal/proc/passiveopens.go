package proc

import (
	"bytes"
	"errors"
	"fmt"
	"path/filepath"
	"strconv"
)

// PassiveOpensReader reads the TCP PassiveOpens counter (connections accepted, handshake
// completed or not) of one network namespace, again and again: with plain syscalls into a
// buffer of its own, as os.Open's file registers with the Go poller and a text parser
// allocates, both for every read, which the adaptive drain's polls every 20 ms make count.
type PassiveOpensReader struct {
	path string
	buf  []byte
}

// NewPassiveOpensReader reads the counter of pid's network namespace, from ROOT/PID/net/snmp.
func NewPassiveOpensReader(root string, pid int) *PassiveOpensReader {
	return &PassiveOpensReader{path: filepath.Join(root, strconv.Itoa(pid), "net", "snmp")}
}

// Read reads the counter now.
func (r *PassiveOpensReader) Read() (uint64, error) {
	if r.buf == nil {
		r.buf = make([]byte, 0, 8<<10)
	}
	b, err := ReadSmall(r.path, r.buf, 0)
	if err != nil {
		return 0, err
	}
	r.buf = b // grown, if it had to be: the next read needs as much
	return parsePassiveOpens(b)
}

// parsePassiveOpens finds PassiveOpens in the text of a net/snmp file: a "Tcp:" line of names,
// then a "Tcp:" line of values.
func parsePassiveOpens(b []byte) (uint64, error) {
	tcp := []byte("Tcp:")
	var names []byte
	for len(b) > 0 {
		line := b
		if i := bytes.IndexByte(b, '\n'); i >= 0 {
			line, b = b[:i], b[i+1:]
		} else {
			b = nil
		}
		if !bytes.HasPrefix(line, tcp) {
			continue
		}
		if names == nil {
			names = line[len(tcp):]
			continue
		}
		values := line[len(tcp):]
		for {
			var name, value []byte
			name, names = field(names)
			value, values = field(values)
			if name == nil || value == nil {
				break
			}
			if string(name) == "PassiveOpens" {
				v, err := strconv.ParseUint(string(value), 10, 64)
				if err != nil {
					return 0, fmt.Errorf("net/snmp: PassiveOpens %q: %w", value, err)
				}
				return v, nil
			}
		}
		break
	}
	return 0, errors.New("net/snmp: no Tcp PassiveOpens")
}

// field splits off the first space-separated field of b (nil when there is none).
func field(b []byte) (f, rest []byte) {
	b = bytes.TrimLeft(b, " ")
	if len(b) == 0 {
		return nil, nil
	}
	if i := bytes.IndexByte(b, ' '); i >= 0 {
		return b[:i], b[i:]
	}
	return b, nil
}
