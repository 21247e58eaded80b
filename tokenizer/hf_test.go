package tokenizer_test

import (
	"fmt"
	"os"
	"slices"
	"strconv"
	"testing"
	"unicode/utf8"

	"github.com/stretchr/testify/require"

	"github.com/tandemrl/tandem/internal/hforacle"
	"github.com/tandemrl/tandem/tokenizer"
)

// The differential suite: tandem's tokenizer against Hugging Face's own
// (npm tokenizers@0.23.2, the Rust crate) on the real tokenizer.json of four
// model families, id for id and byte for byte. .ci/hf-oracle installs the
// oracle and the files (testdata/hf/README.md).

// hfModels are the folders under $TANDEM_HF_DIR/models.
var hfModels = []string{"qwen3", "llama3_1", "deepseek_v3", "gemma3"}

const (
	// hfSeed and hfRandomStrings choose the seeded random strings per model
	// (tokenizers.md §10.15 asks for at least 3,000). TANDEM_HF_SEED and
	// TANDEM_HF_RANDOM override them for a longer search by hand.
	hfSeed          = 20261201
	hfRandomStrings = 3200
	// hfRandomIDSeqs is the number of random id sequences decoded per model.
	hfRandomIDSeqs = 1000
	// hfShownMismatches is how many mismatches a model reports in full, and
	// hfShownPerKind how many of one kind (encode, decode, TokenID, …).
	hfShownMismatches = 20
	hfShownPerKind    = 6
	// hfSweepBatch is how many sweep strings go in one oracle request.
	hfSweepBatch = 256
)

// TestMatchesHuggingFace encodes and decodes thousands of strings per model
// with tandem and with Hugging Face, and requires zero differences: encode
// without and with add_special_tokens and with encode_special_tokens; decode
// of Hugging Face's ids with and without skip_special_tokens; decode of every
// prefix of short emoji and accent cases; decode of random id sequences;
// StreamDecoder == Decode; sweeps over the Unicode normalization and
// character tables; TokenID, Token and VocabSize over the whole vocabulary.
func TestMatchesHuggingFace(t *testing.T) {
	dir := hforacle.Node(t)
	for _, m := range hfModels {
		t.Run(m, func(t *testing.T) {
			t.Parallel()
			testAgainstHF(t, dir, m)
		})
	}
}

// hfRun is one model's comparison: tandem's tokenizer, its oracle, and the
// report of what differed.
type hfRun struct {
	t     *testing.T
	tok   *tokenizer.Tokenizer
	o     *hfOracle
	rep   *hfReport
	info  hfAnswer // vocab_size and added tokens
	vocab map[string]int
	ids   []*string // id_to_token of every id
	seed  uint64
}

func testAgainstHF(t *testing.T, hfDir, model string) {
	modelDir := hforacle.Model(t, model)
	r := &hfRun{t: t, o: startOracle(t, hfDir, modelDir), rep: &hfReport{t: t, model: model}}
	var err error
	r.tok, err = tokenizer.Load(modelDir)
	require.NoError(t, err, "load %s", modelDir)
	r.info, err = r.o.call(hfRequest{Op: "info"})
	require.NoError(t, err)
	vocab, err := r.o.call(hfRequest{Op: "vocab"})
	require.NoError(t, err)
	r.vocab, r.ids = vocab.Vocab, vocab.Tokens
	r.seed = uint64(envInt(t, "TANDEM_HF_SEED", hfSeed))
	nRandom := envInt(t, "TANDEM_HF_RANDOM", hfRandomStrings)

	targeted := append(targetedCases(r.info.Added), pathologicalCases()...)
	cases := slices.Clone(targeted)
	gen := newStringGen(r.seed, r.info.Added)
	for i := range nRandom {
		cases = append(cases, hfCase{name: fmt.Sprintf("random/%d", i), text: gen.next()})
	}
	prefixIDs := r.strings(cases)
	seqs := randomIDSeqs(r.seed, r.vocab, r.info.Added, hfRandomIDSeqs)
	prefixes := r.decodes(prefixIDs, seqs)
	sweeps := append(normalizationSweep(), codePointSweep()...)
	r.sweeps(sweeps)
	r.rep.checkVocab(r.tok, r.info.VocabSize, r.vocab, r.ids)

	t.Logf("%s: %d strings (%d targeted, %d of them 100k–200k; %d random of seed %d), each: encode, encode add_special_tokens, encode split_special_tokens, decode and decode skip_special_tokens of HF's ids, StreamDecoder; %d random id sequences decoded; %d prefix decodes; %d Unicode sweep strings; %d vocabulary entries (TokenID, Token, VocabSize): %d checks, %d mismatches",
		model, len(cases), len(targeted), len(pathologicalCases()), nRandom, r.seed, len(seqs), prefixes, len(sweeps), len(r.vocab), r.rep.checks, r.rep.mismatches)
	r.rep.finish()
}

// strings sends every case through encode ×3 and decode ×2 and returns
// HF's ids of the cases that ask for prefix decodes.
func (r *hfRun) strings(cases []hfCase) (prefixIDs [][]int) {
	reqs := make([]hfRequest, len(cases))
	for i, c := range cases {
		// JavaScript strings are UTF-16: invalid UTF-8 would not reach HF as is.
		require.True(r.t, utf8.ValidString(c.text), "case %s is not valid UTF-8", c.name)
		reqs[i] = hfRequest{Op: "case", Text: c.text, Plain: c.big}
	}
	err := r.o.stream(reqs, func(i int, a hfAnswer) {
		r.rep.checkCase(r.tok, cases[i], a)
		if cases[i].prefixes {
			prefixIDs = append(prefixIDs, a.IDs)
		}
	})
	require.NoError(r.t, err)
	return prefixIDs
}

// decodes compares the decode of every prefix of prefixIDs and of the
// random id sequences; it returns the number of prefixes.
func (r *hfRun) decodes(prefixIDs, seqs [][]int) (prefixes int) {
	var reqs []hfRequest
	for _, ids := range prefixIDs {
		reqs = append(reqs, hfRequest{Op: "prefixes", IDs: ids})
	}
	for _, ids := range seqs {
		reqs = append(reqs, hfRequest{Op: "decode", IDs: ids})
	}
	err := r.o.stream(reqs, func(i int, a hfAnswer) {
		if i < len(prefixIDs) {
			prefixes += len(a.Texts)
			r.rep.checkPrefixes(r.tok, prefixIDs[i], a.Texts)
			return
		}
		i -= len(prefixIDs)
		r.rep.checkDecode(r.tok, fmt.Sprintf("random ids/%d", i), "", seqs[i], hfDecoded{false, a.Dec}, hfDecoded{true, a.DecSkip})
	})
	require.NoError(r.t, err)
	return prefixes
}

// sweeps compares encode and decode of the sweep strings, sent in batches.
func (r *hfRun) sweeps(cases []hfCase) {
	var reqs []hfRequest
	for i := 0; i < len(cases); i += hfSweepBatch {
		req := hfRequest{Op: "encode_all"}
		for _, c := range cases[i:min(i+hfSweepBatch, len(cases))] {
			req.Texts = append(req.Texts, c.text)
		}
		reqs = append(reqs, req)
	}
	err := r.o.stream(reqs, func(i int, a hfAnswer) {
		for j, ids := range a.IDsList {
			c := cases[i*hfSweepBatch+j]
			r.rep.ids("encode", c, ids, r.tok.Encode(c.text, tokenizer.EncodeOptions{}))
			r.rep.checkDecode(r.tok, c.name, c.text, ids, hfDecoded{false, a.DecList[j]})
		}
	})
	require.NoError(r.t, err)
}

// envInt is the integer in the environment variable name, or def.
func envInt(t *testing.T, name string, def int) int {
	v := os.Getenv(name)
	if v == "" {
		return def
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 0 {
		t.Fatalf("%s=%q: want a non-negative integer", name, v)
	}
	return n
}
