package ui

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/tandemrl/tandem/basemodel"
	"github.com/tandemrl/tandem/checkpoint"
	"github.com/tandemrl/tandem/engine"
	"github.com/tandemrl/tandem/policy"
	"github.com/tandemrl/tandem/runlog"
	"github.com/tandemrl/tandem/tasks/arithmetic"
)

// The browser suite: Debian's chromium driven by the npm package
// playwright-core, both installed by .ci/browser into $TANDEM_BROWSER_DIR.
const (
	chromiumPath   = "/usr/bin/chromium"
	browserInstall = "run .ci/browser (Debian chromium, Node.js 20, npm) and set TANDEM_BROWSER_DIR to the folder it prints"
)

// needBrowser returns the folder holding node_modules/playwright-core, or
// skips t (fails it under CI=true, where the suite must run).
func needBrowser(t *testing.T) string {
	t.Helper()
	dir := os.Getenv("TANDEM_BROWSER_DIR")
	var missing []error
	if dir == "" {
		missing = append(missing, errors.New("TANDEM_BROWSER_DIR is not set"))
	} else if _, err := os.Stat(filepath.Join(dir, "node_modules", "playwright-core", "package.json")); err != nil {
		missing = append(missing, fmt.Errorf("no playwright-core in %s", dir))
	}
	if _, err := os.Stat(chromiumPath); err != nil {
		missing = append(missing, fmt.Errorf("no %s", chromiumPath))
	}
	if _, err := exec.LookPath("node"); err != nil {
		missing = append(missing, errors.New("no node in PATH"))
	}
	if len(missing) > 0 {
		msg := fmt.Sprintf("browser tests: %v: %s", errors.Join(missing...), browserInstall)
		if os.Getenv("CI") == "true" {
			t.Fatal("CI=true and " + msg)
		}
		t.Skip(msg)
	}
	return dir
}

// browserSpec is what the node script checks, written as JSON for it.
type browserSpec struct {
	Base        string         `json:"base"`
	Playwright  string         `json:"playwright"` // node_modules folder
	Chromium    string         `json:"chromium"`
	UserData    string         `json:"user_data"`
	Screenshots string         `json:"screenshots"`
	Deadline    int64          `json:"deadline_ms"` // Unix ms: every wait ends by then
	Runs        []string       `json:"runs"`
	Finished    finishedSpec   `json:"finished"`
	Compare     []string       `json:"compare"`
	CompareN    map[string]int `json:"compare_points"`
	Live        liveSpec       `json:"live"`
	Play        playSpec       `json:"play"`
	Big         string         `json:"big"`
}

type finishedSpec struct {
	Name        string         `json:"name"`
	Points      map[string]int `json:"points"`       // chart id → circles, from the metrics file
	Batches     int            `json:"batches"`      // timeline batch marks
	Rewards     []float64      `json:"rewards"`      // reward_mean per step
	SampleStep  int            `json:"sample_step"`  // last step with rollouts
	SampleRows  int            `json:"sample_rows"`  // its rollouts
	ZoomFrom    int            `json:"zoom_from"`    // a server zoom to check
	ZoomTo      int            `json:"zoom_to"`      //
	ZoomRewards int            `json:"zoom_rewards"` // reward points in it
}

type liveSpec struct {
	Name    string `json:"name"`
	Logged  int    `json:"logged"`  // steps in metrics.jsonl when the page opens
	Appends int    `json:"appends"` // steps the test appends while it watches
}

type playSpec struct {
	Run         string   `json:"run"`
	Checkpoint  string   `json:"checkpoint"`
	Prompt      string   `json:"prompt"`
	MaxTokens   int      `json:"max_tokens"`
	Temperature float64  `json:"temperature"`
	Seed        int64    `json:"seed"`
	Completions []string `json:"completions"`
}

// TestBrowser drives the dashboard in a real browser: the runs list, a
// finished run's charts (points counted against its metrics file, hover,
// zoom), a run that trains while the page watches, compare, the playground
// and the samples page. Screenshots go to $TANDEM_SCREENSHOTS (default: a
// temporary folder); their paths are logged.
func TestBrowser(t *testing.T) {
	modules := filepath.Join(needBrowser(t), "node_modules")
	ctx := browserCtx(t)
	root := t.TempDir()
	spec := browserSpec{Playwright: modules, Chromium: chromiumPath, UserData: t.TempDir(), Screenshots: screenshotsDir(t)}
	spec.Finished = writeFinished(t, root, "finished")
	fixture{name: "other", steps: 80, evalEvery: 20, summary: "ok", lr: 0.01, objective: "ppo"}.write(t, root)
	spec.Compare = []string{"finished", "other"}
	spec.CompareN = map[string]int{"reward": 120 + 80, "accuracy": 6 + 4}
	spec.Play = writePlayground(t, filepath.Join(root, "finished"), "finished")
	spec.Big = "big"
	fixture{name: "big", steps: 100_000, evalEvery: 1000, summary: "ok"}.write(t, root)
	live := openLiveRun(t, root, "live", 3)
	spec.Live = liveSpec{Name: "live", Logged: 3, Appends: 3}
	spec.Runs = []string{"big", "finished", "live", "other"}

	h, err := New(root, Options{PollInterval: 10 * time.Millisecond})
	require.NoError(t, err)
	srv := httptest.NewServer(h)
	defer srv.Close()
	spec.Base = srv.URL
	if d, ok := ctx.Deadline(); ok {
		// The script's waits end first, so a hang fails with what it
		// waited for rather than a kill.
		spec.Deadline = d.Add(-time.Until(d) / 10).UnixMilli()
	}
	runNode(t, ctx, spec, live)
}

// browserCtx ends a little before the test's deadline, or after ten
// minutes without one (a hang guard, not a timing).
func browserCtx(t *testing.T) context.Context {
	ctx := testCtx(t)
	if _, ok := ctx.Deadline(); !ok {
		c, cancel := context.WithTimeout(ctx, 10*time.Minute)
		t.Cleanup(cancel)
		ctx = c
	}
	return ctx
}

func screenshotsDir(t *testing.T) string {
	dir := os.Getenv("TANDEM_SCREENSHOTS")
	if dir == "" {
		return t.TempDir()
	}
	require.NoError(t, os.MkdirAll(dir, 0o755))
	abs, err := filepath.Abs(dir)
	require.NoError(t, err)
	return abs
}

// writeFinished writes a finished 120-step run with evaluations and
// rollouts, and derives what its page must draw from the files written.
func writeFinished(t *testing.T, root, name string) finishedSpec {
	const steps = 120
	dir := fixture{name: name, steps: steps, evalEvery: 20, summary: "ok"}.write(t, root)
	writeSamples(t, dir, steps, 4, 2)
	recs, err := runlog.ReadMetricsFile(filepath.Join(dir, runlog.MetricsFile))
	require.NoError(t, err)
	var sum summary
	b, err := os.ReadFile(filepath.Join(dir, SummaryFile))
	require.NoError(t, err)
	require.NoError(t, json.Unmarshal(b, &sum))
	require.Less(t, len(recs), MaxPoints, "no downsampling: one point per line")

	f := finishedSpec{Name: name, SampleStep: steps - 1, SampleRows: 4 * 2, ZoomFrom: 30, ZoomTo: 69, ZoomRewards: 40}
	keys := map[int]bool{}
	for _, r := range recs {
		f.Rewards = append(f.Rewards, r.RewardMean)
		for k, n := range r.Staleness {
			if n > 0 {
				keys[k] = true
				f.Batches++
			}
		}
	}
	n := len(recs)
	f.Points = map[string]int{
		"reward": n, "accuracy": len(sum.Evals), "staleness": len(keys) * n, "stale-trained": 2 * n,
		"versions": 2 * n, "samples": n, "tokens": n, "gap": n, "counts": 3 * n,
	}
	return f
}

// writePlayground saves an adapter of the shipped model as a sampler
// checkpoint of the run and samples it straight from the engine: the
// completions the playground must show.
func writePlayground(t *testing.T, dir, run string) playSpec {
	m, err := basemodel.Load()
	require.NoError(t, err)
	ad, err := engine.NewAdapter[float32](m.Config, engine.LoraConfig{Rank: 2, Alpha: 2, Seed: 1, TrainAttn: true})
	require.NoError(t, err)
	st, err := checkpoint.Open(filepath.Join(dir, CheckpointsDir))
	require.NoError(t, err)
	ck, err := st.Save(t.Context(), checkpoint.Meta{Run: run, Name: "000120", Kind: policy.SamplerWeights, Version: 120, Step: 120, BaseModel: basemodel.Name},
		func(d string) error { return engine.SaveAdapter(d, ad, basemodel.Name) })
	require.NoError(t, err)
	p := playSpec{Run: run, Checkpoint: ck.URI().String(), Prompt: "What is 12 + 35?", MaxTokens: 12, Temperature: 0.7, Seed: 7}
	s, err := engine.NewSampler(m, engine.SamplerOptions{})
	require.NoError(t, err)
	require.NoError(t, s.LoadAdapter(ck.Dir))
	ids, err := arithmetic.EncodePrompt(p.Prompt)
	require.NoError(t, err)
	seqs, _, err := s.Sample(t.Context(), ids, 4, engine.SamplingParams{MaxTokens: p.MaxTokens, Temperature: p.Temperature, Seed: p.Seed,
		StopTokens: []int{engine.Newline, engine.EOS}})
	require.NoError(t, err)
	for _, sq := range seqs {
		p.Completions = append(p.Completions, arithmetic.Decode(sq.Tokens))
	}
	return p
}

// liveRun is a run the test trains step by step: a runlog.Run it logs
// fixture records to when the page is ready for one.
type liveRun struct {
	rl   *runlog.Run
	next int
}

func openLiveRun(t *testing.T, root, name string, logged int) *liveRun {
	rl, err := runlog.Open(filepath.Join(root, name), map[string]any{"name": name, "rl": map[string]any{"steps": 100}, "algo": map[string]any{"objective": "tis"}})
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, rl.Close()) })
	l := &liveRun{rl: rl}
	for range logged {
		l.step(t)
	}
	return l
}

func (l *liveRun) step(t *testing.T) {
	require.NoError(t, l.rl.Log(record(l.next)))
	l.next++
}

// nodeMsg is one line the script prints: a request to log the next step
// of the live run, or a line for the test log.
type nodeMsg struct {
	Append *int   `json:"append"`
	Log    string `json:"log"`
}

// runNode runs testdata/browser.mjs on spec, logging the live run's steps
// when it asks for them, and fails t if the script fails.
func runNode(t *testing.T, ctx context.Context, spec browserSpec, live *liveRun) {
	specPath := filepath.Join(t.TempDir(), "spec.json")
	b, err := json.Marshal(spec)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(specPath, b, 0o644))
	script, err := filepath.Abs(filepath.Join("testdata", "browser.mjs"))
	require.NoError(t, err)

	cmd := exec.CommandContext(ctx, "node", script, specPath)
	cmd.Env = append(os.Environ(), "HOME="+spec.UserData, "XDG_CONFIG_HOME="+spec.UserData, "XDG_CACHE_HOME="+spec.UserData)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.StdoutPipe()
	require.NoError(t, err)
	require.NoError(t, cmd.Start())
	waited := false
	defer func() { // a failed check below still ends and reaps node
		if !waited {
			_ = cmd.Process.Kill()
			_ = cmd.Wait()
		}
	}()
	sc := bufio.NewScanner(out)
	for sc.Scan() {
		var m nodeMsg
		if json.Unmarshal(sc.Bytes(), &m) != nil {
			t.Logf("node: %s", sc.Text())
			continue
		}
		switch {
		case m.Append != nil:
			require.Equal(t, live.next, *m.Append, "the script asks for the steps in order")
			live.step(t)
		case m.Log != "":
			t.Log(m.Log)
		}
	}
	err = cmd.Wait()
	waited = true
	require.NoError(t, err, "browser suite failed:\n%s", stderr.String())
	if s := stderr.String(); s != "" {
		t.Logf("node stderr:\n%s", s)
	}
}
