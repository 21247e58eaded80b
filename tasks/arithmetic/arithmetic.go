// Package arithmetic is the addition task the embedded model is built for:
// problems "What is 12 + 35?", a deterministic split into training and
// held-out problems, the noisy pretraining corpus that gives the base model
// the skill without the reliability, and the task's wiring, defined here
// once for every job: the prompt tokens (EncodePrompt), the reward (Reward:
// a correctness term and a format term), the training dataset (Dataset) and
// held-out evaluation (Evaluate), graded by the reward's correctness term.
//
// The base model learns from lines such as
//
//	What is 12 + 35? 47
//
// where, by design, only some answers are right (the rest are near misses)
// and some lines use a wordier format. The model thus learns addition as a
// distribution whose mode is right but whose samples often are not: RL then
// has something real to improve, and the held-out problems measure whether
// it did.
package arithmetic

import (
	"fmt"
	"math/rand/v2"
	"strings"
)

// Max is the largest operand: problems add two integers in [0, Max].
const Max = 99

// Problem is one addition.
type Problem struct{ A, B int }

// Prompt is the question the model completes.
func (p Problem) Prompt() string { return fmt.Sprintf("What is %d + %d?", p.A, p.B) }

// Answer is the right sum.
func (p Problem) Answer() int { return p.A + p.B }

// String returns "a+b".
func (p Problem) String() string { return fmt.Sprintf("%d+%d", p.A, p.B) }

// HeldOutSize is the number of problems kept out of pretraining and RL.
const HeldOutSize = 500

// splitSeed fixes the split: every user of this package sees the same one.
const splitSeed = 20261130

// Split returns every problem with operands in [0, Max], shuffled once with
// a fixed seed, divided into training problems and HeldOutSize held-out ones.
// The held-out problems appear in no pretraining line and no RL batch.
func Split() (train, heldOut []Problem) {
	all := make([]Problem, 0, (Max+1)*(Max+1))
	for a := 0; a <= Max; a++ {
		for b := 0; b <= Max; b++ {
			all = append(all, Problem{a, b})
		}
	}
	rng := rand.New(rand.NewPCG(splitSeed, 1))
	rng.Shuffle(len(all), func(i, j int) { all[i], all[j] = all[j], all[i] })
	return all[HeldOutSize:], all[:HeldOutSize]
}

// CorpusConfig shapes the noisy pretraining corpus. Zero values mean the
// documented defaults.
type CorpusConfig struct {
	// CorrectProb is the chance a line's answer is right (default 0.4);
	// otherwise it is off by 1–9 either way (never negative).
	CorrectProb float64 `json:"correct_prob"`
	// WordyProb is the chance a line says "The answer is 47." instead of
	// "47" (default 0.15).
	WordyProb float64 `json:"wordy_prob"`
}

func (c CorpusConfig) withDefaults() CorpusConfig {
	if c.CorrectProb == 0 {
		c.CorrectProb = 0.4
	}
	if c.WordyProb == 0 {
		c.WordyProb = 0.15
	}
	return c
}

// Validate checks that both probabilities are in [0, 1].
func (c CorpusConfig) Validate() error {
	if c.CorrectProb < 0 || c.CorrectProb > 1 {
		return fmt.Errorf("arithmetic: correct_prob %v must be in [0, 1]", c.CorrectProb)
	}
	if c.WordyProb < 0 || c.WordyProb > 1 {
		return fmt.Errorf("arithmetic: wordy_prob %v must be in [0, 1]", c.WordyProb)
	}
	return nil
}

// Line returns one corpus line for p (ending in '\n'), drawn with rng.
func (c CorpusConfig) Line(rng *rand.Rand, p Problem) string {
	c = c.withDefaults()
	ans := p.Answer()
	if rng.Float64() >= c.CorrectProb {
		for {
			d := 1 + rng.IntN(9)
			if rng.IntN(2) == 0 {
				d = -d
			}
			if ans+d >= 0 {
				ans += d
				break
			}
		}
	}
	if rng.Float64() < c.WordyProb {
		return fmt.Sprintf("%s The answer is %d.\n", p.Prompt(), ans)
	}
	return fmt.Sprintf("%s %d\n", p.Prompt(), ans)
}

// ParsePrompt recovers the problem from a prompt written by Prompt.
func ParsePrompt(s string) (Problem, error) {
	var p Problem
	s = strings.TrimSpace(s)
	if _, err := fmt.Sscanf(s, "What is %d + %d?", &p.A, &p.B); err != nil {
		return Problem{}, fmt.Errorf("arithmetic: prompt %q is not \"What is A + B?\": %w", s, err)
	}
	return p, nil
}
