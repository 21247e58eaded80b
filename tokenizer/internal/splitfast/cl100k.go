package splitfast

import "unicode/utf8"

// The Qwen2 and cl100k patterns differ only in how many digits one match
// takes. Their alternatives, tried in order at each match start:
//
//  1. (?i:'s|'t|'re|'ve|'m|'ll|'d)
//  2. [^\r\n\p{L}\p{N}]?\p{L}+
//  3. \p{N} (Qwen2) or \p{N}{1,3} (cl100k)
//  4. " ?[^\s\p{L}\p{N}]+[\r\n]*"
//  5. \s*[\r\n]+
//  6. \s+(?!\S)
//  7. \s+

func splitQwen2(dst [][2]int, s string) [][2]int { return splitCL(dst, s, 1) }

func splitCL100K(dst [][2]int, s string) [][2]int { return splitCL(dst, s, 3) }

func splitCL(dst [][2]int, s string, maxDigits int) [][2]int {
	for i := 0; i < len(s); {
		var end int
		// Fast paths for an ASCII word and a space before one (alternative 2).
		if b := s[i]; asciiClass[b] == letter {
			end = runEnd(s, i+1, letter)
		} else if b == ' ' && i+1 < len(s) && asciiClass[s[i+1]] == letter {
			end = runEnd(s, i+2, letter)
		} else {
			end = matchCL(s, i, maxDigits)
		}
		dst = append(dst, [2]int{i, end})
		i = end
	}
	return dst
}

// matchCL returns the end of the match that starts at i (i < len(s)); every
// character starts one, so end > i.
func matchCL(s string, i, maxDigits int) int {
	b := s[i]
	if b == '\'' {
		if n := contractionFold(s, i+1); n > 0 {
			return i + 1 + n // 1
		}
	}
	c, n := classAt(s, i)
	switch c {
	case letter:
		return runEnd(s, i+n, letter) // 2, without the prefix
	case number:
		j := i + n // 3
		for k := 1; k < maxDigits && j < len(s); k++ {
			c, n := classAt(s, j)
			if c != number {
				break
			}
			j += n
		}
		return j
	}
	// c is other or space; b starts it.
	next, nn := other, 0
	if i+n < len(s) {
		next, nn = classAt(s, i+n)
	}
	if next == letter && b != '\r' && b != '\n' {
		return runEnd(s, i+n+nn, letter) // 2, with the prefix
	}
	if c == other {
		return breakRunEnd(s, runEnd(s, i+n, other)) // 4, without the space
	}
	if b == ' ' && next == other && nn > 0 {
		return breakRunEnd(s, runEnd(s, i+1+nn, other)) // 4, with the space
	}
	end, last, lastBreak := spaceRun(s, i)
	switch {
	case lastBreak >= 0:
		return lastBreak + 1 // 5: \s* backtracks to the last line break
	case end == len(s):
		return end // 6: nothing follows
	case last > i:
		return last // 6: leave the last space to the next word
	}
	return end // 7: a single space before a non-space
}

// contractionFold returns the length of the case-folded contraction
// (s, t, re, ve, m, ll, d) at s[i:], or 0. Under Unicode simple case folding
// the only character outside ASCII that folds to one of these letters is
// U+017F ſ (to s); the Kelvin sign folds to k, which no contraction has.
func contractionFold(s string, i int) int {
	if i >= len(s) {
		return 0
	}
	switch s[i] {
	case 's', 'S', 't', 'T', 'm', 'M', 'd', 'D':
		return 1
	case 'r', 'R', 'v', 'V':
		if i+1 < len(s) && (s[i+1] == 'e' || s[i+1] == 'E') {
			return 2
		}
	case 'l', 'L':
		if i+1 < len(s) && (s[i+1] == 'l' || s[i+1] == 'L') {
			return 2
		}
	case 0xC5: // first byte of U+017F
		if r, n := utf8.DecodeRuneInString(s[i:]); r == 'ſ' {
			return n
		}
	}
	return 0
}
