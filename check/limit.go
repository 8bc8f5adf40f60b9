package check

// How much of one input drainit check reads: every input is bounded, so that no file or pipe,
// however large or endless, is held whole (docs/check.md, "How it reads its input": why 64 MiB).

import (
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
)

// maxInput is the most drainit check reads of one input: a file, or standard input.
const maxInput = 64 << 20

// tooLargeMsg is what a ReadError says of an input over maxInput.
var tooLargeMsg = fmt.Sprintf("larger than %d MiB: not read", maxInput>>20)

// errTooLarge is what a limited reader says past maxInput.
var errTooLarge = errors.New(tooLargeMsg)

// tooLarge is the ReadError for an input over maxInput.
func tooLarge(file string) error {
	return &ReadError{File: file, Msg: tooLargeMsg}
}

// unreadable says whether a ReadError is about reading the input rather than what it holds.
func unreadable(re *ReadError) bool {
	return re.Msg == tooLargeMsg || strings.HasPrefix(re.Msg, "cannot read")
}

// limited passes an input through up to maxInput bytes from where it started; past that its
// reads fail with errTooLarge. It keeps the input's first bytes, up to cap(head), so that what
// was read need not be read again to be looked at (a pipe cannot be). It seeks when the input
// does, which Read uses to start over.
type limited struct {
	r      io.Reader
	seeker io.Seeker // nil when r cannot seek
	origin int64     // r's offset when reading started
	pos    int64     // bytes past origin
	over   bool      // the input went on past maxInput
	head   []byte
}

func newLimited(r io.Reader, headSize int) *limited {
	l := &limited{r: r, head: make([]byte, 0, headSize)}
	if s, ok := r.(io.Seeker); ok {
		if pos, err := s.Seek(0, io.SeekCurrent); err == nil {
			l.seeker, l.origin = s, pos
		}
	}
	return l
}

// Read reads at most up to maxInput; at it, one byte more tells whether the input goes on.
func (l *limited) Read(p []byte) (int, error) {
	if l.over {
		return 0, errTooLarge
	}
	if l.pos >= maxInput {
		var b [1]byte
		n, err := l.r.Read(b[:])
		if n > 0 {
			l.over = true
			return 0, errTooLarge
		}
		return 0, err
	}
	if room := maxInput - l.pos; int64(len(p)) > room {
		p = p[:room]
	}
	n, err := l.r.Read(p)
	l.keepHead(p[:n])
	l.pos += int64(n)
	return n, err
}

// keepHead copies what of b lies in the head. It goes by position: reading again after a seek
// back rewrites the same bytes.
func (l *limited) keepHead(b []byte) {
	if l.pos < 0 || l.pos >= int64(cap(l.head)) {
		return
	}
	at := int(l.pos)
	n := min(len(b), cap(l.head)-at)
	if end := at + n; end > len(l.head) {
		l.head = l.head[:end]
	}
	copy(l.head[at:], b[:n])
}

// Seek seeks the input, if it can.
func (l *limited) Seek(offset int64, whence int) (int64, error) {
	if l.seeker == nil {
		return 0, errors.New("input cannot seek")
	}
	pos, err := l.seeker.Seek(offset, whence)
	if err == nil {
		l.pos = pos - l.origin
	}
	return pos, err
}

// readSmall reads a regular file (after links) of at most maxInput bytes; anything else (a
// pipe, which could block forever; a device, which could be endless) is an error.
func readSmall(path string) ([]byte, error) {
	st, err := os.Stat(path)
	if err != nil {
		return nil, err
	}
	if !st.Mode().IsRegular() {
		return nil, fmt.Errorf("%s: not a regular file", path)
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, maxInput+1))
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", path, err)
	}
	if len(data) > maxInput {
		return nil, tooLarge(path)
	}
	return data, nil
}
