package chat

import (
	"fmt"
	"regexp"
	"strings"
	"time"
)

var (
	rawOpen  = regexp.MustCompile(`^\{%[-+]?\s*raw\s*[-+]?%\}`)
	rawClose = regexp.MustCompile(`\{%[-+]?\s*endraw\s*[-+]?%\}`)
)

// overridden maps the filters this package replaces with Python-exact
// versions to the template variables that hold them.
var overridden = map[string]string{"tojson": tojsonName, "trim": trimName}

// rewriteFilters renames the overridden filters in every {{ … }} and
// {% … %} tag (outside string literals, comments and raw blocks):
// ardanlabs/jinja looks filters up among its builtins first and has no way
// to replace one, but falls back to template variables for unknown names.
func rewriteFilters(src string) string {
	var b strings.Builder
	b.Grow(len(src) + 64)
	for i := 0; i < len(src); {
		p := strings.IndexByte(src[i:], '{')
		if p < 0 || i+p+1 >= len(src) {
			b.WriteString(src[i:])
			break
		}
		p += i
		b.WriteString(src[i:p])
		switch src[p+1] {
		case '#':
			end := strings.Index(src[p+2:], "#}")
			if end < 0 {
				b.WriteString(src[p:])
				return b.String()
			}
			end += p + 4
			b.WriteString(src[p:end])
			i = end
		case '%', '{':
			if m := rawOpen.FindString(src[p:]); m != "" {
				loc := rawClose.FindStringIndex(src[p+len(m):])
				if loc == nil {
					b.WriteString(src[p:])
					return b.String()
				}
				end := p + len(m) + loc[1]
				b.WriteString(src[p:end])
				i = end
				continue
			}
			closer := "%}"
			if src[p+1] == '{' {
				closer = "}}"
			}
			i = rewriteTag(&b, src, p, closer)
		default:
			b.WriteByte('{')
			i = p + 1
		}
	}
	return b.String()
}

// rewriteTag copies the tag opening at p through its closer, renaming
// `| name` for the overridden filters, and returns the index after it.
func rewriteTag(b *strings.Builder, src string, p int, closer string) int {
	b.WriteString(src[p : p+2])
	var quote byte
	for i := p + 2; i < len(src); i++ {
		c := src[i]
		switch {
		case quote != 0:
			b.WriteByte(c)
			if c == '\\' && i+1 < len(src) {
				i++
				b.WriteByte(src[i])
			} else if c == quote {
				quote = 0
			}
		case c == '\'' || c == '"':
			quote = c
			b.WriteByte(c)
		case strings.HasPrefix(src[i:], closer):
			b.WriteString(closer)
			return i + len(closer)
		case c == '|':
			b.WriteByte(c)
			j := i + 1
			for j < len(src) && (src[j] == ' ' || src[j] == '\t' || src[j] == '\n' || src[j] == '\r') {
				j++
			}
			k := j
			for k < len(src) && isIdentByte(src[k]) {
				k++
			}
			if to, ok := overridden[src[j:k]]; ok {
				b.WriteString(src[i+1 : j])
				b.WriteString(to)
				i = k - 1
			}
		default:
			b.WriteByte(c)
		}
	}
	return len(src)
}

func isIdentByte(c byte) bool {
	return c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9'
}

// strftime formats t as Python's datetime.strftime (glibc's strftime) does
// a naive local time, for the directives chat templates use; "%-d" style
// flags drop padding. An unknown directive is written as is.
func strftime(t time.Time, format string) string {
	var b strings.Builder
	for i := 0; i < len(format); i++ {
		c := format[i]
		if c != '%' || i+1 == len(format) {
			b.WriteByte(c)
			continue
		}
		i++
		noPad := false
		if format[i] == '-' && i+1 < len(format) {
			noPad = true
			i++
		}
		num := func(n, width int) {
			if noPad {
				fmt.Fprintf(&b, "%d", n)
			} else {
				fmt.Fprintf(&b, "%0*d", width, n)
			}
		}
		switch format[i] {
		case 'Y':
			fmt.Fprintf(&b, "%d", t.Year())
		case 'y':
			num(t.Year()%100, 2)
		case 'm':
			num(int(t.Month()), 2)
		case 'd':
			num(t.Day(), 2)
		case 'e':
			if noPad {
				fmt.Fprintf(&b, "%d", t.Day())
			} else {
				fmt.Fprintf(&b, "%2d", t.Day())
			}
		case 'j':
			num(t.YearDay(), 3)
		case 'H':
			num(t.Hour(), 2)
		case 'I':
			h := t.Hour() % 12
			if h == 0 {
				h = 12
			}
			num(h, 2)
		case 'M':
			num(t.Minute(), 2)
		case 'S':
			num(t.Second(), 2)
		case 'f':
			fmt.Fprintf(&b, "%06d", t.Nanosecond()/1000)
		case 'p':
			if t.Hour() < 12 {
				b.WriteString("AM")
			} else {
				b.WriteString("PM")
			}
		case 'a':
			b.WriteString(t.Weekday().String()[:3])
		case 'A':
			b.WriteString(t.Weekday().String())
		case 'b', 'h':
			b.WriteString(t.Month().String()[:3])
		case 'B':
			b.WriteString(t.Month().String())
		case 'w':
			fmt.Fprintf(&b, "%d", int(t.Weekday()))
		case 'Z', 'z':
			// transformers formats datetime.now(), a naive time: no zone.
		case 'F':
			b.WriteString(t.Format("2006-01-02"))
		case 'T':
			b.WriteString(t.Format("15:04:05"))
		case '%':
			b.WriteByte('%')
		default:
			b.WriteByte('%')
			if noPad {
				b.WriteByte('-')
			}
			b.WriteByte(format[i])
		}
	}
	return b.String()
}
