package tokenizer

import "unicode/utf8"

// The ByteLevel alphabet (GPT-2's bytes_to_unicode): the printable bytes
// '!'..'~', '¡'..'¬' and '®'..'ÿ' stand for themselves; the other 68 bytes
// map to U+0100 upward, in byte order (space → 'Ġ', '\n' → 'Ċ').
var (
	byteToRune [256]rune
	byteToUTF8 [256]string
	// runeToByte maps a character of the alphabet (all below U+0144) back
	// to its byte; -1 for characters outside it.
	runeToByte [0x144]int16
)

func init() {
	for i := range runeToByte {
		runeToByte[i] = -1
	}
	n := rune(0)
	for b := 0; b < 256; b++ {
		r := rune(b)
		if !(b >= '!' && b <= '~' || b >= 0xA1 && b <= 0xAC || b >= 0xAE && b <= 0xFF) {
			r = 0x100 + n
			n++
		}
		byteToRune[b] = r
		byteToUTF8[b] = string(r)
		runeToByte[r] = int16(b)
	}
}

// appendByteLevel appends the ByteLevel characters of the bytes of s.
func appendByteLevel(dst []byte, s string) []byte {
	for i := 0; i < len(s); i++ {
		dst = append(dst, byteToUTF8[s[i]]...)
	}
	return dst
}

// appendByteLevelDecoded appends the bytes a token's ByteLevel characters
// stand for; a token with a character outside the alphabet (an added token
// such as "<｜User｜>") is appended as its own UTF-8, as Hugging Face does.
func appendByteLevelDecoded(dst []byte, tok string) []byte {
	start := len(dst)
	for i := 0; i < len(tok); {
		c := tok[i]
		if c < utf8.RuneSelf {
			if b := runeToByte[c]; b >= 0 {
				dst = append(dst, byte(b))
				i++
				continue
			}
			return append(dst[:start], tok...)
		}
		r, n := utf8.DecodeRuneInString(tok[i:])
		if r >= rune(len(runeToByte)) || runeToByte[r] < 0 {
			return append(dst[:start], tok...)
		}
		dst = append(dst, byte(runeToByte[r]))
		i += n
	}
	return dst
}
