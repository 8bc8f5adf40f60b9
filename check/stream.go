package check

// Reading without holding the file: a document, or one item of a top-level List, at a time,
// cut out along lines; whatever the cutting cannot vouch for (anchors, aliases, directives, a
// piece the parser reads other than the cut assumed) starts over with readWhole, the reference.
// docs/check.md, "How it reads its input", has the measurements and the one difference by design.

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"

	"go.yaml.in/yaml/v3"
)

// Read parses one file of YAML manifests (several documents, List objects) and returns the pod
// templates it holds, in file order. Objects of other kinds, and mappings without a kind, are
// skipped. A YAML syntax error, a document that is not an object, or a field the rules read
// having the wrong shape is a *ReadError, as is an error reading in.
//
// Read streams: it holds one document, or one item of a List, at a time, not the file. When in
// is an io.Seeker (a file) it may seek back to where in was when Read started. It reads at most
// 64 MiB (maxInput): input that goes on past that is a *ReadError saying so, whatever it holds.
func Read(file string, in io.Reader) ([]Workload, error) {
	r := &reader{file: file}
	if _, err := readHead(r, in, 0); err != nil {
		return nil, err
	}
	return r.out, nil
}

// readHead is Read into r, which also returns the input's first bytes, up to headSize, for a
// look at what did not read.
func readHead(r *reader, in io.Reader, headSize int) ([]byte, error) {
	lim := newLimited(in, headSize)
	err := readLimited(r, lim)
	if lim.over {
		// Whatever the readers made of the failed read (the YAML parser calls it an input
		// error), the input is too large.
		return lim.head, tooLarge(r.file)
	}
	return lim.head, err
}

func readLimited(r *reader, in *limited) error {
	src := &source{br: bufio.NewReaderSize(in, 32<<10)}
	if pos, err := in.Seek(0, io.SeekCurrent); err == nil {
		src.seeker, src.start = in, pos
	}
	fresh := *r // what r was before the streamer read into it, for starting over
	s := &streamer{r: r, src: src}
	err := s.run()
	if !errors.Is(err, errStartOver) {
		return err
	}
	again, err := src.rewind()
	if err != nil {
		return readFailed(r.file, err)
	}
	*r = fresh
	return r.whole(again)
}

// readFailed is the ReadError for input that could not be read in.
func readFailed(file string, err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		err = pe.Err // the file is named already
	}
	return &ReadError{File: file, Msg: "cannot read: " + err.Error()}
}

// errStartOver says the input is not one the line cutting can take apart soundly.
var errStartOver = errors.New("check: input needs the whole-document reader")

// streamedItems is what the items of a streamed List gave, or the first error in item order.
type streamedItems struct {
	found
	err error
}

// source hands out the input line by line and can give it back from the start.
type source struct {
	br     *bufio.Reader
	seeker io.ReadSeeker // nil when in cannot seek: then kept holds what was read
	start  int64
	kept   [][]byte
	line   []byte
	n      int // lines handed out
}

// next returns the next line with its line break (the last line may lack one), io.EOF after.
func (s *source) next() ([]byte, error) {
	s.line = s.line[:0]
	for {
		frag, err := s.br.ReadSlice('\n')
		s.line = append(s.line, frag...)
		if errors.Is(err, bufio.ErrBufferFull) {
			continue // a line longer than the buffer
		}
		if errors.Is(err, io.EOF) && len(s.line) > 0 {
			break
		}
		if err != nil {
			return nil, err
		}
		break
	}
	if s.seeker == nil {
		s.keep(s.line)
	}
	s.n++
	return s.line, nil
}

// keep appends b to the kept text, in blocks, so that keeping never copies what it kept.
func (s *source) keep(b []byte) {
	if n := len(s.kept); n > 0 && cap(s.kept[n-1])-len(s.kept[n-1]) >= len(b) {
		s.kept[n-1] = append(s.kept[n-1], b...)
		return
	}
	// Blocks double up to 1 MiB: small input stays small, big input wastes at most a block.
	size := 4 << 10
	if n := len(s.kept); n > 0 {
		size = min(2*cap(s.kept[n-1]), 1<<20)
	}
	s.kept = append(s.kept, append(make([]byte, 0, max(len(b), size)), b...))
}

// rewind returns the whole input again, from where Read started.
func (s *source) rewind() (io.Reader, error) {
	if s.seeker != nil {
		if _, err := s.seeker.Seek(s.start, io.SeekStart); err != nil {
			return nil, fmt.Errorf("seek back: %w", err)
		}
		return fullReader{s.seeker}, nil
	}
	rs := make([]io.Reader, 0, len(s.kept)+1)
	for _, b := range s.kept {
		rs = append(rs, bytes.NewReader(b))
	}
	return fullReader{io.MultiReader(append(rs, s.br)...)}, nil
}

// fullReader fills every read it can. The YAML parser's errors depend on how its reads come
// back: it decodes a whole read as UTF-8 before it scans, so an invalid byte late in a long read
// is reported before a directive early in it, and not after a short one. readWhole's results are
// the ones it gives on the whole input in one buffer, which a full read stands for.
type fullReader struct{ r io.Reader }

func (f fullReader) Read(p []byte) (int, error) {
	n, err := io.ReadFull(f.r, p)
	if errors.Is(err, io.ErrUnexpectedEOF) {
		err = nil // the next read says io.EOF
	}
	return n, err
}

// lineRun says that the header's lines from local on are the file's lines from orig on.
type lineRun struct{ local, orig int }

// streamer cuts the input into documents, and a document into its header (all of it but the
// items) and its items.
type streamer struct {
	r   *reader
	src *source
	doc int // documents decoded, numbered as readWhole numbers them

	header  []byte
	runs    []lineRun
	hlines  int
	pending int  // line of an "items:" whose value is not known yet; 0 when none
	itemsAt int  // line of the "items:" whose sequence is streamed; 0 when none
	inItems bool // the lines are the items'
	indent  int  // the items' "-" column

	item     []byte
	itemLine int // the file's line of the item's first line
	nItems   int
	streamed *streamedItems
}

func (s *streamer) run() error {
	// Another encoding than UTF-8, or a byte-order mark, is not for cutting along lines.
	if b, _ := s.src.br.Peek(3); len(b) > 0 && (b[0] == 0 || b[0] == 0xFE || b[0] == 0xFF ||
		bytes.HasPrefix(b, []byte("\xEF\xBB\xBF"))) {
		return errStartOver
	}
	for {
		line, err := s.src.next()
		if errors.Is(err, io.EOF) {
			if err := s.endDoc(); err != nil {
				return err
			}
			s.r.finish()
			return nil
		}
		if err != nil {
			return readFailed(s.r.file, err)
		}
		if err := s.add(line, s.src.n); err != nil {
			return err
		}
	}
}

// add takes line number no.
func (s *streamer) add(line []byte, no int) error {
	text := bytes.TrimRight(line, "\r\n")
	if bytes.HasPrefix(text, []byte("---")) || bytes.HasPrefix(text, []byte("...")) || bytes.HasPrefix(text, []byte("%")) {
		rest := bytes.TrimLeft(text[min(3, len(text)):], " \t")
		if text[0] != '-' || len(rest) > 0 && rest[0] != '#' || len(text) > 3 && text[3] != ' ' && text[3] != '\t' {
			return errStartOver // "...", a directive, "--- value", or "---text"
		}
		if err := s.endDoc(); err != nil {
			return err
		}
		s.headerLine(line, no)
		return nil
	}
	ind, content := indentOf(text)
	if s.inItems {
		switch {
		case len(content) == 0 || content[0] == '#' || ind > s.indent:
			s.item = append(s.item, line...) // the item goes on; blank and comment lines too
			return nil
		case ind == s.indent && isEntry(content):
			if err := s.endItem(); err != nil {
				return err
			}
			s.item, s.itemLine = append(s.item, line...), no
			return nil
		case ind == 0:
			if err := s.endItem(); err != nil {
				return err
			}
			s.inItems = false // back to the top-level mapping's keys
		default:
			return errStartOver
		}
	}
	if s.pending != 0 {
		if len(content) == 0 || content[0] == '#' {
			s.headerLine(line, no)
			return nil
		}
		at := s.pending
		s.pending = 0
		if isEntry(content) {
			if s.itemsAt != 0 {
				return errStartOver // items given twice: let readWhole say so
			}
			s.itemsAt, s.inItems, s.indent = at, true, ind
			s.streamed = &streamedItems{}
			s.item, s.itemLine = append(s.item[:0], line...), no
			return nil
		}
	}
	if ind == 0 && isItemsKey(text) {
		s.pending = no
	}
	s.headerLine(line, no)
	return nil
}

func (s *streamer) headerLine(line []byte, no int) {
	s.hlines++
	if n := len(s.runs); n == 0 || s.runs[n-1].orig+s.hlines-s.runs[n-1].local != no {
		s.runs = append(s.runs, lineRun{local: s.hlines, orig: no})
	}
	s.header = append(s.header, line...)
}

// endItem reads the item in s.item, if any.
func (s *streamer) endItem() error {
	if len(s.item) == 0 {
		return nil
	}
	d, err := decodeOne(s.item)
	s.item = s.item[:0]
	if err != nil || len(d.Content) != 1 || d.Content[0].Kind != yaml.SequenceNode || len(d.Content[0].Content) != 1 {
		return errStartOver
	}
	shift := s.itemLine - 1
	if !relines(d, func(l int) int { return l + shift }) {
		return errStartOver
	}
	i := s.nItems
	s.nItems++
	if s.streamed.err != nil {
		return nil // the List is in error already; the rest is only parsed
	}
	it, p := d.Content[0].Content[0], fmt.Sprintf("items[%d]", i)
	if it.Kind != yaml.MappingNode {
		s.streamed.err = s.r.errorf(it, p, "want an object, got %s", describe(it))
		return nil
	}
	// The item's Workloads count only if the document turns out to be a List: keep them aside.
	s.r.found, s.streamed.found = s.streamed.found, s.r.found
	if err = s.r.aliasing(it, p); err == nil {
		err = s.r.object(it, p, 1)
	}
	s.r.found, s.streamed.found = s.streamed.found, s.r.found
	s.streamed.err = err
	return nil
}

// endDoc reads the document ending here, if there is one, then makes ready for the next.
func (s *streamer) endDoc() error {
	defer s.reset()
	if s.inItems {
		if err := s.endItem(); err != nil {
			return err
		}
	}
	if len(s.header) == 0 {
		return nil
	}
	d, err := decodeOne(s.header)
	if errors.Is(err, io.EOF) && s.itemsAt == 0 {
		return nil // blank lines and comments: no document
	}
	if err != nil {
		return errStartOver
	}
	s.doc++
	runs := s.runs
	if !relines(d, func(l int) int {
		i := len(runs) - 1
		for i > 0 && runs[i].local > l {
			i--
		}
		return runs[i].orig + l - runs[i].local
	}) {
		return errStartOver
	}
	var root *yaml.Node
	if len(d.Content) > 0 {
		root = d.Content[0]
	}
	if s.itemsAt != 0 && !s.streamedKey(root) {
		return errStartOver
	}
	if root == nil || isNull(root) {
		return nil
	}
	if root.Kind != yaml.MappingNode {
		return &ReadError{File: s.r.file, Line: root.Line, Msg: fmt.Sprintf(
			"document %d is %s, not a Kubernetes object", s.doc, describe(root))}
	}
	if err := s.r.aliasing(root, ""); err != nil {
		return err
	}
	s.r.streamed = s.streamed
	defer func() { s.r.streamed = nil }()
	return s.r.object(root, "", 0)
}

// streamedKey says whether the header's root is the block mapping the cut assumed: one whose
// single items key is the line the items were streamed under, its value left empty by the cut.
func (s *streamer) streamedKey(root *yaml.Node) bool {
	if root == nil || root.Kind != yaml.MappingNode || root.Style&yaml.FlowStyle != 0 {
		return false
	}
	found := false
	for i := 0; i+1 < len(root.Content); i += 2 {
		k, v := root.Content[i], root.Content[i+1]
		if k.Kind != yaml.ScalarNode || k.Value != "items" {
			continue
		}
		if found || k.Line != s.itemsAt || k.Style != 0 || !isNull(v) || v.Value != "" {
			return false
		}
		found = true
	}
	return found
}

func (s *streamer) reset() {
	s.header, s.runs, s.hlines = s.header[:0], s.runs[:0], 0
	s.pending, s.itemsAt, s.inItems, s.indent = 0, 0, false, 0
	s.item, s.nItems, s.streamed = s.item[:0], 0, nil
}

// decodeOne decodes a piece that must hold one document: io.EOF when it holds none, an error
// when more.
func decodeOne(b []byte) (*yaml.Node, error) {
	dec := yaml.NewDecoder(bytes.NewReader(b))
	var d yaml.Node
	if err := decode(dec, &d); err != nil {
		return nil, err
	}
	var more yaml.Node
	if err := decode(dec, &more); !errors.Is(err, io.EOF) {
		return nil, errStartOver
	}
	return &d, nil
}

// relines moves every node of a piece to its line in the file. It reports false for an anchor
// or an alias: either may pair with one in another piece.
func relines(n *yaml.Node, to func(int) int) bool {
	if n.Anchor != "" || n.Kind == yaml.AliasNode {
		return false
	}
	n.Line = to(n.Line)
	for _, c := range n.Content {
		if !relines(c, to) {
			return false
		}
	}
	return true
}

// indentOf splits a line into its leading spaces' count and the rest.
func indentOf(text []byte) (int, []byte) {
	i := 0
	for i < len(text) && text[i] == ' ' {
		i++
	}
	return i, text[i:]
}

// isEntry says whether a line's content starts a block sequence entry: "-" then a blank.
func isEntry(content []byte) bool {
	return len(content) > 0 && content[0] == '-' && (len(content) == 1 || content[1] == ' ' || content[1] == '\t')
}

// isItemsKey says whether a line is "items:" with nothing after it but a comment.
func isItemsKey(text []byte) bool {
	rest, ok := bytes.CutPrefix(text, []byte("items:"))
	if !ok || len(rest) > 0 && rest[0] != ' ' && rest[0] != '\t' {
		return false
	}
	rest = bytes.TrimLeft(rest, " \t")
	return len(rest) == 0 || rest[0] == '#'
}
