// Package pretrain builds tandem's shipped base model: a synthetic arithmetic
// corpus and a deterministic full-parameter training run of the embedded
// engine over it. The same Options give the same model, bit for bit, on any
// machine and for any thread count.
//
// The corpus is lines of the form
//
//	What is 12 + 35? 47
//	What is 81 - 26? 55
//	What is 7 * 8? 56
//
// (addition and subtraction of numbers below 100 with a non-negative result,
// multiplication of numbers up to 12). A fraction of the lines (NoiseRate)
// carry a wrong answer, off by 1 to 10, so the pretrained model is right often
// but not always and RL has something to improve.
package pretrain

import (
	"fmt"
	"math/rand/v2"
)

// Problem is one arithmetic question and its correct answer.
type Problem struct {
	A, B   int
	Op     byte // '+', '-' or '*'
	Answer int
}

// Prompt is the question as the model sees it, without the answer:
// "What is 12 + 35?".
func (p Problem) Prompt() string { return fmt.Sprintf("What is %d %c %d?", p.A, p.Op, p.B) }

// Line is the question with answer ans and a newline: "What is 12 + 35? 47\n".
func (p Problem) Line(ans int) string { return fmt.Sprintf("%s %d\n", p.Prompt(), ans) }

// Corpus draws problems and training lines from a seeded stream.
type Corpus struct {
	rng       *rand.Rand
	noiseRate float64
}

// NewCorpus returns a corpus drawing from (seed, stream); noiseRate is the
// fraction of lines with a wrong answer.
func NewCorpus(seed, stream uint64, noiseRate float64) *Corpus {
	return &Corpus{rng: rand.New(rand.NewPCG(seed, stream)), noiseRate: noiseRate}
}

// Problem draws a problem: half additions, a quarter subtractions, a
// quarter multiplications.
func (c *Corpus) Problem() Problem {
	switch r := c.rng.IntN(4); {
	case r < 2:
		a, b := c.rng.IntN(100), c.rng.IntN(100)
		return Problem{A: a, B: b, Op: '+', Answer: a + b}
	case r == 2:
		a, b := c.rng.IntN(100), c.rng.IntN(100)
		if a < b {
			a, b = b, a
		}
		return Problem{A: a, B: b, Op: '-', Answer: a - b}
	default:
		a, b := c.rng.IntN(13), c.rng.IntN(13)
		return Problem{A: a, B: b, Op: '*', Answer: a * b}
	}
}

// Line draws a problem and its training line, whose answer is wrong with
// probability noiseRate (off by 1–10, never negative).
func (c *Corpus) Line() (Problem, string) {
	p := c.Problem()
	ans := p.Answer
	if c.rng.Float64() < c.noiseRate {
		d := 1 + c.rng.IntN(10)
		if c.rng.IntN(2) == 0 && ans-d >= 0 {
			d = -d
		}
		ans += d
	}
	return p, p.Line(ans)
}
