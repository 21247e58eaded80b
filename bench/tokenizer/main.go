// Command tokenizer measures tandem's Hugging Face tokenizer against
// Hugging Face's own (npm tokenizers@0.23.2, the Rust crate, through Node)
// on the same texts in the same run: encode and decode tokens/s, one thread
// each, and tandem's allocations per encoded word on the warm path.
//
//	.ci/hf-oracle                 # once: installs the oracle and the model files
//	go run ./bench/tokenizer -json
//
// One thread each: tandem runs with GOMAXPROCS=1 (the encode loop on one
// goroutine); Hugging Face with RAYON_NUM_THREADS=1 and
// TOKENIZERS_PARALLELISM=false, timed by the Node script itself
// (process.hrtime around its loop, so neither process start nor the pipe
// counts). Hugging Face is timed two ways, an awaited encode() per chunk and
// one encodeBatch() of all chunks; the ratio is against the faster. Rounds
// alternate Hugging Face and tandem and the best round of each is kept.
//
// Human-readable lines go first; with -json the last line is one JSON
// object.
package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/tandemrl/tandem/tokenizer"
)

// Result is the JSON line.
type Result struct {
	GOMAXPROCS  int           `json:"gomaxprocs"`
	CPUs        int           `json:"cpus"`
	HFThreads   string        `json:"hf_threads"`
	Go          string        `json:"go"`
	Node        string        `json:"node"`
	Rounds      int           `json:"rounds"`
	ChunkBytes  int           `json:"chunk_bytes"`
	LoadAverage string        `json:"load_average"` // /proc/loadavg at the end: the machine may be shared
	Models      []ModelResult `json:"models"`
}

// ModelResult is one model's figures.
type ModelResult struct {
	Model       string         `json:"model"`
	LoadSeconds float64        `json:"tandem_load_seconds"`
	Corpora     []CorpusResult `json:"corpora"`
}

// CorpusResult is one model on one text.
type CorpusResult struct {
	Corpus string `json:"corpus"`
	Bytes  int    `json:"bytes"`
	Chunks int    `json:"chunks"`
	Tokens int    `json:"tokens"`
	// Words are Hugging Face's pre-tokens of the normalized chunks: the
	// words BPE encodes (for Gemma 3, one per chunk).
	Words int `json:"words"`
	// MismatchedChunks counts chunks whose tandem ids differ from HF's.
	MismatchedChunks int `json:"mismatched_chunks"`

	TandemEncodeTPS     float64 `json:"tandem_encode_tokens_per_s"`
	TandemEncodeColdTPS float64 `json:"tandem_encode_cold_tokens_per_s"` // first pass after Load
	HFEncodeTPS         float64 `json:"hf_encode_tokens_per_s"`          // awaited encode() per chunk
	HFEncodeBatchTPS    float64 `json:"hf_encode_batch_tokens_per_s"`    // one encodeBatch()
	HFEncodeColdTPS     float64 `json:"hf_encode_cold_tokens_per_s"`     // first pass, encode()
	EncodeRatio         float64 `json:"encode_ratio"`                    // tandem / the faster HF
	TandemDecodeTPS     float64 `json:"tandem_decode_tokens_per_s"`
	HFDecodeTPS         float64 `json:"hf_decode_tokens_per_s"`
	DecodeRatio         float64 `json:"decode_ratio"`

	AllocsPerWord  float64 `json:"tandem_allocs_per_word"` // warm path, runtime.MemStats.Mallocs
	AllocsPerToken float64 `json:"tandem_allocs_per_token"`
	AllocsPerChunk float64 `json:"tandem_allocs_per_chunk"`
	BytesPerToken  float64 `json:"tandem_bytes_allocated_per_token"`
}

func main() {
	var (
		asJSON   = flag.Bool("json", false, "print a JSON object on the last line")
		models   = flag.String("models", "qwen3,llama3_1,deepseek_v3,gemma3", "models under $TANDEM_HF_DIR/models, comma-separated")
		rounds   = flag.Int("rounds", 5, "alternating timed rounds per measurement (the best is kept)")
		chunk    = flag.Int("chunk", 4096, "bytes per encode call")
		mixedLen = flag.Int("mixed-bytes", 512<<10, "bytes of mixed-script text")
		seed     = flag.Uint64("seed", 1, "seed of the mixed-script text")
		procs    = flag.Int("procs", 1, "GOMAXPROCS for tandem")
		hfDir    = flag.String("hf-dir", "", "the oracle's folder (default $TANDEM_HF_DIR, else ~/.cache/tandem/hf)")
		script   = flag.String("oracle", "", "path of oracle.js (default tokenizer/testdata/hf/oracle.js in this module)")
	)
	flag.Parse()
	if err := run(*asJSON, strings.Split(*models, ","), *rounds, *chunk, *mixedLen, *seed, *procs, *hfDir, *script); err != nil {
		fmt.Fprintln(os.Stderr, "bench/tokenizer:", err)
		os.Exit(1)
	}
}

func run(asJSON bool, models []string, rounds, chunk, mixedLen int, seed uint64, procs int, hfDir, script string) error {
	if rounds < 1 || chunk < 1 {
		return fmt.Errorf("-rounds and -chunk must be positive (got %d, %d)", rounds, chunk)
	}
	hfDir, script, err := locate(hfDir, script)
	if err != nil {
		return err
	}
	runtime.GOMAXPROCS(procs)
	english, err := opticks(chunk)
	if err != nil {
		return err
	}
	texts := []corpus{english, mixed(mixedLen, chunk, seed)}

	res := Result{GOMAXPROCS: runtime.GOMAXPROCS(0), CPUs: runtime.NumCPU(), HFThreads: hfThreads,
		Go: runtime.Version(), Node: nodeVersion(), Rounds: rounds, ChunkBytes: chunk}
	fmt.Printf("tandem vs Hugging Face tokenizers 0.23.2 (node %s): tandem %s GOMAXPROCS=%d; HF %s; best of %d alternating rounds; %d CPUs\n",
		res.Node, res.Go, res.GOMAXPROCS, hfThreads, rounds, res.CPUs)
	for _, m := range models {
		start := time.Now()
		mr, err := benchModel(hfDir, script, strings.TrimSpace(m), texts, rounds)
		if err != nil {
			return fmt.Errorf("%s: %w", m, err)
		}
		fmt.Fprintf(os.Stderr, "%s: measured in %.1fs\n", mr.Model, time.Since(start).Seconds())
		res.Models = append(res.Models, mr)
	}
	printTable(res)
	if b, err := os.ReadFile("/proc/loadavg"); err == nil {
		res.LoadAverage = strings.TrimSpace(string(b))
		fmt.Println("load average:", res.LoadAverage)
	}
	if asJSON {
		b, err := json.Marshal(res)
		if err != nil {
			return err
		}
		fmt.Println(string(b))
	}
	return nil
}

// printTable prints the human-readable table.
func printTable(res Result) {
	fmt.Println("M tok/s; ratio = tandem / HF (the faster HF encode); allocs on tandem's warm path (words = HF's pre-tokens)")
	tw := tabwriter.NewWriter(os.Stdout, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "model\ttext\tchunks\ttokens\tencode tandem\t(cold)\tHF encode\tHF batch\tratio\tdecode tandem\tHF\tratio\tallocs/word\tallocs/token\tids\t")
	for _, mr := range res.Models {
		for _, c := range mr.Corpora {
			ids := "equal"
			if c.MismatchedChunks > 0 {
				ids = fmt.Sprintf("%d chunks DIFFER", c.MismatchedChunks)
			}
			fmt.Fprintf(tw, "%s\t%s\t%d\t%d\t%.2f\t(%.2f)\t%.2f\t%.2f\t%.2fx\t%.1f\t%.1f\t%.2fx\t%.3f\t%.4f\t%s\t\n",
				mr.Model, c.Corpus, c.Chunks, c.Tokens, c.TandemEncodeTPS/1e6, c.TandemEncodeColdTPS/1e6,
				c.HFEncodeTPS/1e6, c.HFEncodeBatchTPS/1e6, c.EncodeRatio, c.TandemDecodeTPS/1e6, c.HFDecodeTPS/1e6,
				c.DecodeRatio, c.AllocsPerWord, c.AllocsPerToken, ids)
		}
	}
	tw.Flush()
}

func benchModel(hfDir, script, model string, texts []corpus, rounds int) (ModelResult, error) {
	mr := ModelResult{Model: model}
	dir := filepath.Join(hfDir, "models", model)
	o, err := startOracle(script, hfDir, dir)
	if err != nil {
		return mr, err
	}
	defer o.Close()
	start := time.Now()
	tok, err := tokenizer.Load(dir)
	if err != nil {
		return mr, err
	}
	mr.LoadSeconds = time.Since(start).Seconds()
	for _, c := range texts {
		cr, err := benchCorpus(o, tok, c, rounds)
		if err != nil {
			return mr, fmt.Errorf("%s text: %w", c.name, err)
		}
		mr.Corpora = append(mr.Corpora, cr)
	}
	return mr, o.Close()
}

func nodeVersion() string {
	out, err := exec.Command("node", "--version").Output()
	if err != nil {
		return "?"
	}
	return strings.TrimSpace(string(out))
}
