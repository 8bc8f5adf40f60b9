package drainwatch

import (
	"io"
	"os"
	"slices"
)

// readAll reads a whole file into *buf, growing it as needed, and returns the bytes read. /proc
// files generate their content on each read(): one large buffer keeps the calls few.
func readAll(path string, buf *[]byte) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	if cap(*buf) == 0 {
		*buf = make([]byte, 0, 256<<10)
	}
	b := (*buf)[:0]
	for {
		if len(b) == cap(b) {
			b = slices.Grow(b, cap(b))
		}
		n, err := f.Read(b[len(b):cap(b)])
		b = b[:len(b)+n]
		if err == io.EOF || (err == nil && n == 0) {
			break
		}
		if err != nil {
			return nil, err
		}
	}
	*buf = b
	return b, nil
}
