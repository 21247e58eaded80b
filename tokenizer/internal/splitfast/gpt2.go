package splitfast

// The GPT-2 pattern's alternatives, tried in order at each match start:
//
//  1. 's|'t|'re|'ve|'m|'ll|'d (case-sensitive)
//  2. " ?\p{L}+"
//  3. " ?\p{N}+"
//  4. " ?[^\s\p{L}\p{N}]+"
//  5. \s+(?!\S)
//  6. \s+

func splitGPT2(dst [][2]int, s string) [][2]int {
	for i := 0; i < len(s); {
		var end int
		// Fast paths for an ASCII word and a space before one (alternative 2).
		if b := s[i]; asciiClass[b] == letter {
			end = runEnd(s, i+1, letter)
		} else if b == ' ' && i+1 < len(s) && asciiClass[s[i+1]] == letter {
			end = runEnd(s, i+2, letter)
		} else {
			end = matchGPT2(s, i)
		}
		dst = append(dst, [2]int{i, end})
		i = end
	}
	return dst
}

// matchGPT2 returns the end of the match that starts at i (i < len(s));
// every character starts one, so end > i.
func matchGPT2(s string, i int) int {
	b := s[i]
	if b == '\'' {
		if n := contraction(s, i+1); n > 0 {
			return i + 1 + n // 1
		}
	}
	if b == ' ' && i+1 < len(s) {
		if c, n := classAt(s, i+1); c != space {
			return runEnd(s, i+1+n, c) // 2, 3 or 4 with the space
		}
	}
	c, n := classAt(s, i)
	if c != space {
		return runEnd(s, i+n, c) // 2, 3 or 4 without the space
	}
	end, last, _ := spaceRun(s, i)
	switch {
	case end == len(s):
		return end // 5: nothing follows
	case last > i:
		return last // 5: leave the last space to the next word
	}
	return end // 6: a single space before a non-space
}

// contraction returns the length of the contraction (s, t, re, ve, m, ll,
// d, lower case only) at s[i:], or 0.
func contraction(s string, i int) int {
	if i >= len(s) {
		return 0
	}
	switch s[i] {
	case 's', 't', 'm', 'd':
		return 1
	case 'r', 'v':
		if i+1 < len(s) && s[i+1] == 'e' {
			return 2
		}
	case 'l':
		if i+1 < len(s) && s[i+1] == 'l' {
			return 2
		}
	}
	return 0
}
