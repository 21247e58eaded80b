package tokenizer

//go:generate go run onigclass_gen.go

import (
	"strings"
	"unicode/utf8"
)

// onigPattern rewrites a pattern for regexp2 so that its Unicode classes
// hold what Oniguruma's hold: \p{X} becomes [\p{X}…] with the characters
// of onigExtra["X"] (those of Unicode 15.1 and 16.0, which Go's 15.0
// tables lack), \P{X} its complement, and \d likewise; inside a character
// class the characters are added to the class. \P{X} and \D inside a
// class are left as they are. Ruby's inline option m (dot matches a
// newline) becomes regexp2's s; the caller compiles with Multiline, since
// Oniguruma's ^ and $ match at every line.
func onigPattern(p string) string {
	if !strings.Contains(p, `\`) && !strings.Contains(p, "(?") {
		return p
	}
	var b strings.Builder
	b.Grow(len(p))
	inClass := false
	for i := 0; i < len(p); {
		c := p[i]
		switch {
		case c == '\\' && i+1 < len(p):
			n := p[i+1]
			if n == 'Q' { // \Q…\E is literal
				end := len(p)
				if j := strings.Index(p[i+2:], `\E`); j >= 0 {
					end = i + 2 + j + 2
				}
				b.WriteString(p[i:end])
				i = end
				continue
			}
			name, l := "", 0 // the class name and how many bytes follow "\p"
			switch n {
			case 'p', 'P':
				if i+2 < len(p) && p[i+2] == '{' {
					if j := strings.IndexByte(p[i+2:], '}'); j > 0 {
						name, l = p[i+3:i+2+j], j+1
					}
				} else if i+2 < len(p) {
					name, l = p[i+2:i+3], 1
				}
			case 'd', 'D':
				name = "d"
			}
			extra, ok := onigExtra[name]
			if !ok {
				_, size := utf8.DecodeRuneInString(p[i+1:])
				b.WriteString(p[i : i+1+size])
				i += 1 + size
				continue
			}
			esc := p[i : i+2+l]
			neg := n == 'P' || n == 'D'
			if neg {
				esc = `\` + strings.ToLower(p[i+1:i+2]) + p[i+2:i+2+l]
			}
			switch {
			case inClass && neg:
				b.WriteString(p[i : i+2+l])
			case inClass:
				b.WriteString(esc + extra)
			case neg:
				b.WriteString("[^" + esc + extra + "]")
			default:
				b.WriteString("[" + esc + extra + "]")
			}
			i += 2 + l
		case c == '(' && !inClass && strings.HasPrefix(p[i:], "(?"):
			j := i + 2
			for j < len(p) && strings.IndexByte("imx-", p[j]) >= 0 {
				j++
			}
			if j > i+2 && j < len(p) && (p[j] == ')' || p[j] == ':') {
				b.WriteString("(?" + strings.ReplaceAll(p[i+2:j], "m", "s"))
				i = j
				continue
			}
			b.WriteString("(?")
			i += 2
		case c == '[' && !inClass:
			inClass = true
			b.WriteByte('[')
			i++
			if i < len(p) && p[i] == '^' {
				b.WriteByte('^')
				i++
			}
			if i < len(p) && p[i] == ']' { // a leading ']' is literal
				b.WriteByte(']')
				i++
			}
		case c == ']' && inClass:
			inClass = false
			b.WriteByte(']')
			i++
		default:
			b.WriteByte(c)
			i++
		}
	}
	return b.String()
}
