// Command server measures `tandem serve --role sampler` under load: sample
// requests per second and the p50/p99 latency of asample (submit, then poll
// retrieve_future until the result) with 1, 16 and 256 concurrent clients,
// and the protocol's overhead: the same calls made on the embedded engine
// in process, with the same concurrency, give the ratio. The same calls
// through the OpenAI-compatible surface (/v1/completions, one request per
// call) are measured beside them, and so are the same calls on the
// in-process engine serialized (one call at a time, as the sampler was
// before continuous batching): batch× is the batched in-process
// requests/s over the serialized ones.
//
//	go run ./bench/server -json
//
// By default it builds the tandem command and starts it as a process on a
// loopback port; -inprocess serves from this process instead (still over a
// real loopback listener). Both sides use one sampler of the shipped base
// model with -threads cores per call, so the engine work is the same and
// the difference is the protocol. Human-readable lines go first; with
// -json the last line is one JSON object.
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// Level is the measurement at one concurrency.
type Level struct {
	Clients  int     `json:"clients"`
	Requests int     `json:"requests"`
	Errors   int     `json:"errors"`
	RPS      float64 `json:"rps"`
	P50MS    float64 `json:"p50_ms"`
	P99MS    float64 `json:"p99_ms"`
	// The same calls on the engine in process.
	InProcRPS   float64 `json:"inproc_rps"`
	InProcP50MS float64 `json:"inproc_p50_ms"`
	InProcP99MS float64 `json:"inproc_p99_ms"`
	// ThroughputRatio is in-process requests/s over served requests/s;
	// LatencyRatio served p50 over in-process p50 (1 = no overhead).
	ThroughputRatio float64 `json:"throughput_ratio"`
	LatencyRatio    float64 `json:"latency_ratio"`
	// The same calls through the OpenAI-compatible surface (/v1/completions
	// with token-id prompts, by backend/openai's vLLM dialect).
	OpenAIRPS   float64 `json:"openai_rps"`
	OpenAIP50MS float64 `json:"openai_p50_ms"`
	OpenAIP99MS float64 `json:"openai_p99_ms"`
	// The same calls on the in-process engine serialized (one call at a
	// time, local.SamplerOptions.Serial: the sampler before continuous
	// batching); BatchSpeedup is the batched in-process requests/s over
	// these.
	SerialRPS    float64 `json:"serial_rps"`
	SerialP50MS  float64 `json:"serial_p50_ms"`
	SerialP99MS  float64 `json:"serial_p99_ms"`
	BatchSpeedup float64 `json:"batch_speedup"`
}

// Result is the JSON line.
type Result struct {
	Target      string  `json:"target"` // process or inprocess
	BaseModel   string  `json:"base_model"`
	MaxTokens   int     `json:"max_tokens"`
	NumSamples  int     `json:"num_samples"`
	Rounds      int     `json:"rounds"`
	Threads     int     `json:"threads"`
	Levels      []Level `json:"levels"`
	OverheadMS  float64 `json:"overhead_ms"`  // served p50 − in-process p50, 1 client
	Overhead    float64 `json:"overhead"`     // LatencyRatio at 1 client
	WallSeconds float64 `json:"wall_seconds"` // the whole benchmark
	// WireFormat is a forward_backward body in JSON and in protobuf.
	WireFormat WireFormat `json:"wire_format"`
}

type config struct {
	clients    []int
	perClient  int
	rounds     int
	warmup     int
	minReqs    int
	maxTokens  int
	numSamples int
	threads    int
	inprocess  bool
	bin        string
	json       bool
}

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, os.Args[1:], os.Stdout, os.Stderr); err != nil {
		fmt.Fprintln(os.Stderr, "bench/server:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("bench/server", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var cfg config
	levels := fs.String("clients", "1,16,256", "concurrency levels, comma-separated")
	fs.IntVar(&cfg.perClient, "per-client", 2, "requests per client at each level and round")
	fs.IntVar(&cfg.minReqs, "min-requests", 48, "at least this many requests per level and round")
	fs.IntVar(&cfg.warmup, "warmup", 200, "calls made on each side before measuring")
	fs.IntVar(&cfg.rounds, "rounds", 3, "rounds per level, alternating served and in-process calls; each side's best round counts")
	fs.IntVar(&cfg.maxTokens, "max-tokens", 8, "tokens sampled per request")
	fs.IntVar(&cfg.numSamples, "num-samples", 1, "samples per request")
	fs.IntVar(&cfg.threads, "threads", 1, "cores the sampler uses: per batched step, or per call when serialized (server and in process alike)")
	fs.BoolVar(&cfg.inprocess, "inprocess", false, "serve from this process instead of a tandem serve process")
	fs.StringVar(&cfg.bin, "bin", "", "tandem binary to start (default: go build it)")
	fs.BoolVar(&cfg.json, "json", false, "print one JSON object as the last line")
	wireSeqs := fs.Int("wire-sequences", 64, "sequences in the forward_backward body whose JSON and protobuf forms are compared")
	wireTokens := fs.Int("wire-tokens", 512, "tokens per sequence in that body")
	if err := fs.Parse(args); err != nil {
		return err
	}
	for _, s := range strings.Split(*levels, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(s))
		if err != nil || n < 1 {
			return fmt.Errorf("-clients: %q is not a positive integer", s)
		}
		cfg.clients = append(cfg.clients, n)
	}
	if cfg.perClient < 1 || cfg.rounds < 1 || cfg.warmup < 1 || cfg.minReqs < 1 || cfg.maxTokens < 1 || cfg.numSamples < 1 || cfg.threads < 1 {
		return fmt.Errorf("-per-client, -rounds, -warmup, -min-requests, -max-tokens, -num-samples and -threads must be at least 1")
	}
	t0 := time.Now()
	res, err := measure(ctx, cfg, stdout)
	if err != nil {
		return err
	}
	if *wireSeqs < 1 || *wireTokens < 1 {
		return fmt.Errorf("-wire-sequences and -wire-tokens must be at least 1")
	}
	if res.WireFormat, err = measureWireFormat(*wireSeqs, *wireTokens, 5, stdout); err != nil {
		return fmt.Errorf("wire format: %w", err)
	}
	res.WallSeconds = time.Since(t0).Seconds()
	fmt.Fprintf(stdout, "protocol overhead at 1 client: %.2f ms per call (%.2fx the in-process latency); %.1f s in all\n", res.OverheadMS, res.Overhead, res.WallSeconds)
	if cfg.json {
		b, err := json.Marshal(res)
		if err != nil {
			return err
		}
		fmt.Fprintln(stdout, string(b))
	}
	return nil
}
