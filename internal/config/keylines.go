package config

import (
	"fmt"
	"slices"
	"sort"
	"strings"

	"github.com/BurntSushi/toml"
)

// BurntSushi/toml knows the line of every key but does not export it. The
// scanner here finds the lines itself, in a document the parser has
// already accepted: it need not diagnose anything, only step over strings,
// arrays, inline tables and comments so as to tell a key from a value.
// Key text is handed back to the parser, so quoting and escapes in keys
// mean exactly what they mean to the decoder.

// A keyStmt is a key defined in a document: a [table] or [[array]]
// header, or a key = value line (its full key, table included).
type keyStmt struct {
	key    toml.Key
	line   int // line the statement starts on, from 1
	end    int // line its value ends on
	header bool
}

// scanKeys returns the key statements of a valid TOML document in order.
func scanKeys(doc string) ([]keyStmt, error) {
	s := keyScanner{doc: doc}
	for i := 0; i < len(doc); i++ {
		if doc[i] == '\n' {
			s.newlines = append(s.newlines, i)
		}
	}
	// A byte order mark, as the parser reads over it (UTF-16's too).
	for _, bom := range []string{"\xef\xbb\xbf", "\xff\xfe", "\xfe\xff"} {
		if strings.HasPrefix(doc, bom) {
			s.i = len(bom)
			break
		}
	}
	var (
		out   []keyStmt
		table toml.Key
	)
	for {
		s.skipBlank()
		if s.i >= len(doc) {
			return out, nil
		}
		start := s.i
		if doc[s.i] == '[' {
			s.i++
			double := s.i < len(doc) && doc[s.i] == '['
			if double {
				s.i++
			}
			raw := s.until(']')
			key, err := parseKey(raw)
			if err != nil {
				return nil, err
			}
			s.i++ // ']'
			if double {
				s.i++
			}
			table = key
			line := s.lineAt(start)
			out = append(out, keyStmt{key: key, line: line, end: line, header: true})
			continue
		}
		raw := s.until('=')
		key, err := parseKey(raw)
		if err != nil {
			return nil, err
		}
		s.i++ // '='
		s.skipValue()
		full := append(slices.Clip(table), key...)
		out = append(out, keyStmt{key: full, line: s.lineAt(start), end: s.lineAt(max(s.i-1, start))})
	}
}

// parseKey returns the key that raw, the text of a key or of a table
// header between its brackets, names.
func parseKey(raw string) (toml.Key, error) {
	var m map[string]any
	md, err := toml.Decode(raw+" = 0", &m)
	if err != nil {
		return nil, fmt.Errorf("key %q: %w", strings.TrimSpace(raw), err)
	}
	keys := md.Keys()
	if len(keys) == 0 {
		return nil, fmt.Errorf("key %q: no key", strings.TrimSpace(raw))
	}
	return keys[len(keys)-1], nil
}

type keyScanner struct {
	doc      string
	i        int
	newlines []int // offsets of '\n', in order
}

// lineAt is the line, from 1, of the byte at offset off.
func (s *keyScanner) lineAt(off int) int {
	return sort.SearchInts(s.newlines, off) + 1
}

// skipBlank steps over white space, line ends and comments, to the start
// of the next statement.
func (s *keyScanner) skipBlank() {
	for s.i < len(s.doc) {
		switch s.doc[s.i] {
		case ' ', '\t', '\r', '\n':
			s.i++
		case '#':
			s.skipComment()
		default:
			return
		}
	}
}

func (s *keyScanner) skipComment() {
	if n := strings.IndexByte(s.doc[s.i:], '\n'); n >= 0 {
		s.i += n
	} else {
		s.i = len(s.doc)
	}
}

// until moves to the next stop byte outside quotes and returns the text
// before it.
func (s *keyScanner) until(stop byte) string {
	start := s.i
	for s.i < len(s.doc) && s.doc[s.i] != stop {
		if c := s.doc[s.i]; c == '"' || c == '\'' {
			s.skipString()
		} else {
			s.i++
		}
	}
	return s.doc[start:s.i]
}

// skipValue moves to the line end that ends the value starting at s.i,
// stepping over arrays and inline tables that span lines.
func (s *keyScanner) skipValue() {
	depth := 0
	for s.i < len(s.doc) {
		switch s.doc[s.i] {
		case '"', '\'':
			s.skipString()
			continue
		case '[', '{':
			depth++
		case ']', '}':
			depth--
		case '#':
			s.skipComment()
			continue
		case '\n':
			if depth <= 0 {
				return
			}
		}
		s.i++
	}
}

// skipString moves past the string whose opening quote is at s.i: basic
// or literal, on one line or many.
func (s *keyScanner) skipString() {
	q := s.doc[s.i]
	triple := strings.Repeat(string(q), 3)
	if strings.HasPrefix(s.doc[s.i:], triple) {
		s.i += 3
		for s.i < len(s.doc) {
			switch {
			case q == '"' && s.doc[s.i] == '\\':
				s.i += 2
			case strings.HasPrefix(s.doc[s.i:], triple):
				s.i += 3
				// Up to two more quotes belong to the content.
				for n := 0; n < 2 && s.i < len(s.doc) && s.doc[s.i] == q; n++ {
					s.i++
				}
				return
			default:
				s.i++
			}
		}
		return
	}
	s.i++
	for s.i < len(s.doc) {
		switch s.doc[s.i] {
		case '\\':
			if q == '"' {
				s.i++
			}
		case q:
			s.i++
			return
		}
		s.i++
	}
}

// keyLines maps each key of a document, and each table a dotted key or a
// header opens, to the first line that defines it.
type keyLines map[string]int

func newKeyLines(stmts []keyStmt) keyLines {
	l := keyLines{}
	for _, st := range stmts {
		for n := 1; n <= len(st.key); n++ {
			k := st.key[:n].String()
			if _, ok := l[k]; !ok {
				l[k] = st.line
			}
		}
	}
	return l
}

// of is the line of key or, for a key inside an inline table or an array
// of tables, of the nearest enclosing key found; 0 if none is.
func (l keyLines) of(key toml.Key) int {
	for n := len(key); n > 0; n-- {
		if line, ok := l[key[:n].String()]; ok {
			return line
		}
	}
	return 0
}
