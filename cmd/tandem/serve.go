package main

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"time"

	"github.com/tandemrl/tandem/basemodel"
	"github.com/tandemrl/tandem/checkpoint"
	"github.com/tandemrl/tandem/engine"
	"github.com/tandemrl/tandem/server"
	"github.com/tandemrl/tandem/server/ckptstore"
	"github.com/tandemrl/tandem/server/localbackend"
	"github.com/tandemrl/tandem/server/peerstore"
	"github.com/tandemrl/tandem/server/steplog"
)

// EnvAPIKey is read when -api-key is not given.
const EnvAPIKey = "TANDEM_API_KEY"

// StepLogFile is the file in the store folder where `tandem serve` appends
// every training call's final step-log entry (package server/steplog), so
// the log outlives restarts of the process. Its name starts with a dot, so
// checkpoint listings skip it.
const StepLogFile = ".steplog.jsonl"

// ListeningPrefix starts the line serve prints once it accepts calls,
// followed by host:port (useful with -listen 127.0.0.1:0).
const ListeningPrefix = "tandem serve: listening on "

type serveFlags struct {
	listen, role, store, apiKey, base, baseName string
	model                                       string // a Hugging Face folder
	maxContext                                  int
	publicURL, fetchFrom                        string
	threads, samplerThreads                     int
	allowRemote                                 bool
	maxInFlight, keepVersions                   int
}

// staleTemp is how old a checkpoint's temporary folder (a write cut short
// by a crash) must be before serve removes it at start: younger ones may
// belong to another process still writing into the shared store.
const staleTemp = 10 * time.Minute

func runServe(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlags("serve", stderr)
	var f serveFlags
	fs.StringVar(&f.listen, "listen", server.DefaultConfig().Addr, "host:port to listen on (port 0 picks a free one); a non-loopback host needs -allow-remote")
	fs.BoolVar(&f.allowRemote, "allow-remote", false, "allow -listen on an address other than loopback")
	fs.StringVar(&f.fetchFrom, "fetch-from", "", "URL of a tandem server (e.g. the trainer) to download checkpoints from when they are not in -store; for processes that share no folder")
	fs.StringVar(&f.publicURL, "public-url", "", "URL clients reach this server at, for checkpoint archive links (default http://<listen address>)")
	fs.StringVar(&f.role, "role", string(server.RoleBoth), "endpoints to serve: trainer, sampler or both")
	fs.StringVar(&f.store, "store", "tandem-store", "checkpoint store folder, shared by the trainer and sampler processes of a run")
	fs.StringVar(&f.apiKey, "api-key", "", "API key clients must send (X-API-Key or Authorization: Bearer); default $"+EnvAPIKey+"; required")
	fs.IntVar(&f.threads, "threads", runtime.NumCPU(), "cores one training call uses")
	fs.IntVar(&f.samplerThreads, "sampler-threads", 0, "cores one sample call uses (default: -threads)")
	fs.StringVar(&f.base, "base", "", "base weights file (default: the shipped model)")
	fs.StringVar(&f.model, "model", "", "a Hugging Face model folder (Llama, Qwen2, Qwen3, Mistral: config.json, safetensors, tokenizer.json) to host instead of the shipped model")
	fs.IntVar(&f.maxContext, "max-context", 0, "with -model: longest sequence served (default: max_position_embeddings, at most 32768)")
	fs.StringVar(&f.baseName, "base-name", "", "name clients use for the base model (default: "+basemodel.Name+", the -base file's name, or the -model folder's _name_or_path)")
	fs.IntVar(&f.maxInFlight, "max-in-flight", 0, "unfinished calls beyond which the server answers 429 (default 256)")
	fs.IntVar(&f.keepVersions, "keep-versions", 0, "adapter versions kept loaded for sampling (default 16; keep at least max staleness + 1; an evicted version is reloaded from the store when asked for again)")
	withUI := fs.Bool("ui", false, "also serve the run dashboard (tandem ui) over -ui-runs on -ui-listen while serving")
	uiRuns := fs.String("ui-runs", "runs", "with -ui: the runs folder (one folder per run)")
	uiListen := fs.String("ui-listen", "127.0.0.1:8080", "with -ui: loopback host:port of the dashboard (port 0 picks a free one)")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if f.apiKey == "" {
		f.apiKey = os.Getenv(EnvAPIKey)
	}
	if f.apiKey == "" {
		return usagef("serve: no API key: refusing to start an open server; pass -api-key or set %s", EnvAPIKey)
	}
	if err := checkListen("serve", f.listen, f.allowRemote); err != nil {
		return err
	}
	if err := checkUIListen(*withUI, *uiListen); err != nil {
		return err
	}
	ln, err := net.Listen("tcp", f.listen)
	if err != nil {
		return fmt.Errorf("serve: %w", err)
	}
	if f.publicURL == "" {
		f.publicURL = "http://" + ln.Addr().String()
	}
	srv, archives, oa, log, err := newServer(ctx, f, stderr)
	if err != nil {
		ln.Close()
		return err
	}
	mux := http.NewServeMux()
	mux.Handle(archivePrefix+"/", http.StripPrefix(archivePrefix, archives))
	if oa != nil {
		for _, p := range openAIPaths {
			mux.Handle(p, oa)
		}
	}
	mux.Handle("/", srv)
	if *withUI {
		stopUI, err := serveUI(*uiRuns, *uiListen, stderr)
		if err != nil {
			ln.Close()
			return errors.Join(err, log.Close())
		}
		defer stopUI()
	}
	fmt.Fprintf(stdout, "%s%s (role %s, store %s)\n", ListeningPrefix, ln.Addr(), f.role, f.store)
	return errors.Join(srv.ServeHandler(ctx, ln, mux), log.Close())
}

// archivePrefix is where serve answers the signed checkpoint archive URLs
// that GET …/checkpoints/{kind}/{name}/archive redirects to.
const archivePrefix = "/checkpoints"

// signingKey derives the key of archive URL signatures from the API key,
// so every process of a deployment (same key) accepts the URLs any of them
// signs, and no second secret needs handing out.
func signingKey(apiKey string) []byte {
	m := hmac.New(sha256.New, []byte(apiKey))
	m.Write([]byte("tandem serve: checkpoint archive URL signing key, v1"))
	return m.Sum(nil)
}

// checkListen refuses to listen beyond loopback unless allowed; cmd names
// the command in the message.
func checkListen(cmd, addr string, allowRemote bool) error {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return usagef("%s: -listen %q: %v; want host:port, e.g. 127.0.0.1:8000", cmd, addr, err)
	}
	if allowRemote || isLoopback(host) {
		return nil
	}
	return usagef("%s: -listen %q is not a loopback address; exposing the server is an explicit choice: add -allow-remote", cmd, addr)
}

func isLoopback(host string) bool {
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// newServer loads the base model, opens the store and its step log, and
// builds the server and, for roles that sample, its OpenAI-compatible
// surface (nil otherwise); the caller closes the step log after serving.
func newServer(ctx context.Context, f serveFlags, stderr io.Writer) (*server.Server, http.Handler, http.Handler, *steplog.Writer, error) {
	var (
		base        *engine.Model[float32]
		md          *modelDir
		tokenizerID string
		err         error
	)
	switch {
	case f.model != "" && f.base != "":
		return nil, nil, nil, nil, usagef("serve: -model and -base both name a base model; give one")
	case f.model != "":
		if md, err = loadModelDir(f.model, f.maxContext); err == nil {
			base, tokenizerID = md.model, md.dir
			if f.baseName == "" {
				f.baseName = md.info.Name
			}
		}
	case f.base == "":
		base, err = basemodel.Load()
		if f.baseName == "" {
			f.baseName = basemodel.Name
		}
	default:
		base, err = engine.LoadBase[float32](f.base)
		if f.baseName == "" {
			f.baseName = strings.TrimSuffix(filepath.Base(f.base), filepath.Ext(f.base))
		}
	}
	if err != nil {
		return nil, nil, nil, nil, fmt.Errorf("serve: base model: %w", err)
	}
	if err := os.MkdirAll(f.store, 0o755); err != nil {
		return nil, nil, nil, nil, fmt.Errorf("serve: store: %w", err)
	}
	st, err := checkpoint.Open(f.store)
	if err != nil {
		return nil, nil, nil, nil, fmt.Errorf("serve: store: %w", err)
	}
	if n, err := st.Clean(ctx, staleTemp); err != nil {
		fmt.Fprintf(stderr, "tandem serve: cleaning %s: %v\n", f.store, err)
	} else if n > 0 {
		fmt.Fprintf(stderr, "tandem serve: removed %d unfinished checkpoint write(s) older than %v from %s\n", n, staleTemp, f.store)
	}
	if f.threads < 1 {
		return nil, nil, nil, nil, usagef("serve: -threads %d: want at least 1", f.threads)
	}
	if f.samplerThreads == 0 {
		f.samplerThreads = f.threads
	}
	var tokenText map[string]func(int) string
	if md != nil && md.tok != nil {
		tokenText = map[string]func(int) string{f.baseName: md.tok.TokenText}
	}
	be, err := localbackend.New(localbackend.Options{
		Bases: map[string]*engine.Model[float32]{f.baseName: base}, Store: st,
		TrainerThreads: f.threads, SamplerThreads: f.samplerThreads, TokenText: tokenText,
	})
	if err != nil {
		return nil, nil, nil, nil, fmt.Errorf("serve: %w", err)
	}
	models := be.Models()
	for i := range models {
		models[i].TokenizerID = tokenizerID // the folder: AutoTokenizer.from_pretrained loads it
	}
	cfg := server.Config{Addr: f.listen, Role: server.Role(f.role), APIKeys: []string{f.apiKey}, Models: models, MaxInFlight: f.maxInFlight, MaxSamplers: f.keepVersions}
	if err := cfg.Validate(); err != nil {
		return nil, nil, nil, nil, usagef("serve: %v", err)
	}
	log, err := steplog.Open(filepath.Join(st.Root(), StepLogFile))
	if err != nil {
		return nil, nil, nil, nil, fmt.Errorf("serve: %w", err)
	}
	signer := checkpoint.Signer{Key: signingKey(f.apiKey)}
	archives, err := checkpoint.NewHandler(st, signer, checkpoint.HandlerOptions{})
	if err != nil {
		return nil, nil, nil, nil, errors.Join(fmt.Errorf("serve: %w", err), log.Close())
	}
	local := ckptstore.New(st, ckptstore.Options{ArchiveBaseURL: strings.TrimSuffix(f.publicURL, "/") + archivePrefix, Signer: signer})
	var store server.CheckpointStore = local
	if f.fetchFrom != "" {
		if store, err = peerstore.New(local, st, peerstore.Options{PeerURL: f.fetchFrom, APIKey: f.apiKey}); err != nil {
			return nil, nil, nil, nil, errors.Join(usagef("serve: -fetch-from: %v", err), log.Close())
		}
	}
	srv, err := server.New(cfg, server.Options{Backend: be, Store: store, OnStep: log.Append})
	if err != nil {
		return nil, nil, nil, nil, errors.Join(usagef("serve: %v", err), log.Close())
	}
	var oa http.Handler
	if cfg.Role != server.RoleTrainer {
		if oa, err = openAISurface(f, be, base, md, stderr); err != nil {
			return nil, nil, nil, nil, errors.Join(fmt.Errorf("serve: %w", err), log.Close())
		}
	}
	return srv, archives, oa, log, nil
}
