package tokenizer

import (
	"bytes"
	"fmt"
)

// The fast paths of the JSON reader for the bulk of tokenizer.json: the
// model's vocab and merges, read into arenas.

// uint32Value reads a JSON number that must be an integer in [0, 2^32),
// as serde reads a u32 (no sign, fraction or exponent). ok is false for
// another number (which is consumed) or for a value that is not a number
// (which is not).
func (r *jreader) uint32Value() (uint32, bool, error) {
	c := r.peek()
	if c != '-' && (c < '0' || c > '9') {
		return 0, false, nil
	}
	d := r.data
	var n uint64
	i := r.pos
	for i < len(d) && d[i] >= '0' && d[i] <= '9' && n <= 1<<32 {
		n = n*10 + uint64(d[i]-'0')
		i++
	}
	digits := i - r.pos
	if i < len(d) && (d[i] == '.' || d[i] == 'e' || d[i] == 'E' || d[i] == '-' || d[i] >= '0' && d[i] <= '9') ||
		c == '-' || n >= 1<<32 || digits > 1 && c == '0' {
		// Not a plain u32: let the full grammar read (or reject) it.
		if _, err := r.number(); err != nil {
			return 0, false, err
		}
		return 0, false, nil
	}
	r.pos = i
	return uint32(n), true, nil
}

// vocabData is a vocabulary read from a JSON object of token → id: the
// tokens' text lies in one arena, in file order.
type vocabData struct {
	arena []byte
	ends  []uint32 // token i is arena[ends[i-1]:ends[i]]
	ids   []uint32
}

// vocab reads the object at the reader's position.
func (r *jreader) vocab(path string) (*vocabData, error) {
	if err := r.enter(); err != nil {
		return nil, err
	}
	defer func() { r.depth-- }()
	r.pos++ // '{'
	// Size the arenas from the input left (an entry takes at least 6
	// bytes, a token no more than its JSON): capacity that goes unused is
	// never touched, while growing by copies costs the pages twice.
	rest := len(r.data) - r.pos
	v := &vocabData{arena: make([]byte, 0, rest/2), ends: make([]uint32, 0, rest/6), ids: make([]uint32, 0, rest/6)}
	if r.peek() == '}' {
		r.pos++
		return v, nil
	}
	var err error
	for {
		if r.peek() != '"' {
			return nil, r.unexpected("a token")
		}
		if v.arena, err = r.appendStr(v.arena); err != nil {
			return nil, err
		}
		if len(v.arena) > 1<<32-1 {
			return nil, r.syntaxErr("vocabulary too large")
		}
		v.ends = append(v.ends, uint32(len(v.arena)))
		if err := r.expect(':'); err != nil {
			return nil, err
		}
		id, ok, err := r.uint32Value()
		if err != nil {
			return nil, err
		}
		if !ok {
			n := len(v.ends)
			tok := string(v.arena[v.start(n-1):v.ends[n-1]])
			return nil, &LoadError{File: r.file, Path: fmt.Sprintf("%s[%q]", path, tok),
				Msg: "want a token id (an integer from 0 to 4294967295)"}
		}
		v.ids = append(v.ids, id)
		switch r.peek() {
		case ',':
			r.pos++
		case '}':
			r.pos++
			return v, nil
		default:
			return nil, r.unexpected(`"," or "}"`)
		}
	}
}

func (v *vocabData) start(i int) uint32 {
	if i == 0 {
		return 0
	}
	return v.ends[i-1]
}

// mergesData is a merge list read from a JSON array of "a b" strings or
// ["a", "b"] pairs: merge i is arena[cuts[3i]:cuts[3i+1]] and
// arena[cuts[3i+1]:cuts[3i+2]].
type mergesData struct {
	arena []byte
	cuts  []uint32
}

func (m *mergesData) len() int { return len(m.cuts) / 3 }

func (m *mergesData) pair(i int) (a, b []byte) {
	c := m.cuts[3*i : 3*i+3]
	return m.arena[c[0]:c[1]], m.arena[c[1]:c[2]]
}

// merges reads the array at the reader's position. Like Hugging Face, a
// string list skips lines that start with "#version" and needs exactly one
// space in each other line; a pair list needs two strings per pair; one
// list cannot mix the forms.
func (r *jreader) merges(path string) (*mergesData, error) {
	if err := r.enter(); err != nil {
		return nil, err
	}
	defer func() { r.depth-- }()
	r.pos++                     // '['
	rest := len(r.data) - r.pos // as in vocab: a merge takes at least 6 bytes
	m := &mergesData{arena: make([]byte, 0, rest/2), cuts: make([]uint32, 0, rest/2)}
	if r.peek() == ']' {
		r.pos++
		return m, nil
	}
	form := r.peek() // '"' or '['
	if form != '"' && form != '[' {
		return nil, &LoadError{File: r.file, Path: path + "[0]", Msg: `want a merge ("a b" or ["a", "b"])`}
	}
	var err error
	rank := 0 // index among the merges kept, as Hugging Face counts them
	for i := 0; ; i++ {
		if c := r.peek(); c != form {
			return nil, &LoadError{File: r.file, Path: fmt.Sprintf("%s[%d]", path, i),
				Msg: `want a merge in the list's form ("a b" strings or ["a", "b"] pairs, not both)`}
		}
		start := len(m.arena)
		if form == '"' {
			if m.arena, err = r.appendStr(m.arena); err != nil {
				return nil, err
			}
			line := m.arena[start:]
			if bytes.HasPrefix(line, []byte("#version")) {
				m.arena = m.arena[:start]
			} else {
				sp := bytes.IndexByte(line, ' ')
				if sp < 0 || bytes.IndexByte(line[sp+1:], ' ') >= 0 {
					return nil, &LoadError{File: r.file, Path: fmt.Sprintf("%s[%d]", path, i),
						Msg: fmt.Sprintf("merge %d: want two tokens separated by one space, got %q", rank+1, line)}
				}
				// Drop the space: the pair's halves are adjacent in the arena.
				copy(line[sp:], line[sp+1:])
				m.arena = m.arena[:len(m.arena)-1]
				m.cuts = append(m.cuts, uint32(start), uint32(start+sp), uint32(len(m.arena)))
				rank++
			}
		} else {
			if err := r.enter(); err != nil {
				return nil, err
			}
			r.pos++ // '['
			var mid int
			for k := 0; k < 2; k++ {
				if k == 1 {
					if r.peek() == ']' {
						return nil, &LoadError{File: r.file, Path: fmt.Sprintf("%s[%d]", path, i), Msg: "want a pair of two tokens"}
					}
					if err := r.expect(','); err != nil {
						return nil, err
					}
				}
				if r.peek() != '"' {
					return nil, &LoadError{File: r.file, Path: fmt.Sprintf("%s[%d][%d]", path, i, k), Msg: "want a token string"}
				}
				if m.arena, err = r.appendStr(m.arena); err != nil {
					return nil, err
				}
				if k == 0 {
					mid = len(m.arena)
				}
			}
			if r.peek() != ']' {
				return nil, &LoadError{File: r.file, Path: fmt.Sprintf("%s[%d]", path, i), Msg: "want a pair of two tokens"}
			}
			r.pos++
			r.depth--
			m.cuts = append(m.cuts, uint32(start), uint32(mid), uint32(len(m.arena)))
			rank++
		}
		if len(m.arena) > 1<<32-1 {
			return nil, r.syntaxErr("merge list too large")
		}
		switch r.peek() {
		case ',':
			r.pos++
		case ']':
			r.pos++
			return m, nil
		default:
			return nil, r.unexpected(`"," or "]"`)
		}
	}
}
