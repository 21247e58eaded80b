package main

import (
	"bytes"
	"context"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"log"
	"os"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/tandemrl/tandem/backend/local"
	"github.com/tandemrl/tandem/basemodel"
	"github.com/tandemrl/tandem/engine"
	"github.com/tandemrl/tandem/rl"
	"github.com/tandemrl/tandem/rl/algo"
	"github.com/tandemrl/tandem/rl/loop"
	"github.com/tandemrl/tandem/tasks/arithmetic"
)

// Example is the README's "library in a page", kept here so that it
// compiles: TestREADMELibrarySnippet fails when the README's copy and this
// body differ. It is compiled, not run (a run trains for a minute).
func Example() {
	ctx := context.Background()
	base, err := basemodel.Load() // the shipped 1 M-parameter model
	if err != nil {
		log.Fatal(err)
	}
	trainer, err := local.NewTrainer(base, local.TrainerOptions{Run: "arith"})
	if err != nil {
		log.Fatal(err)
	}
	defer trainer.Close()
	sampler, err := local.NewSampler(base, local.SamplerOptions{Shelf: trainer.Shelf()})
	if err != nil {
		log.Fatal(err)
	}
	grpo, err := algo.New(algo.Config{Objective: algo.PPO}, nil)
	if err != nil {
		log.Fatal(err)
	}
	cfg := rl.Config{
		Run: "arith", GroupsPerBatch: 16, GroupSize: 8, MaxStaleness: 2, Steps: 80,
		Adam:     rl.AdamParams{LearningRate: 2e-3, GradClipNorm: 1},
		Sampling: rl.SamplingParams{MaxTokens: 24, Temperature: 1, StopTokens: []int{engine.Newline}},
	}
	run, err := loop.New(cfg, loop.Deps{
		Trainer: trainer, Samplers: []rl.Sampler{sampler}, Algorithm: grpo,
		Dataset: arithmetic.Dataset(cfg.Seed, arithmetic.Reward(arithmetic.FormatWeight)),
		Decode:  arithmetic.Decode,
	})
	if err != nil {
		log.Fatal(err)
	}
	if err := run.Run(ctx); err != nil {
		log.Fatal(err)
	}
	fmt.Println("trained up to version", run.Report().Version)
}

// readmeBlocks returns the ```go blocks of README.md's section title.
func readmeBlocks(t *testing.T, title string) []string {
	t.Helper()
	b, err := os.ReadFile("../../README.md")
	require.NoError(t, err)
	_, sec, ok := strings.Cut(string(b), "\n## "+title+"\n")
	require.True(t, ok, "README has a section %q", title)
	sec, _, _ = strings.Cut(sec, "\n## ")
	var blocks []string
	for _, m := range regexp.MustCompile("(?s)```go\n(.*?)```").FindAllStringSubmatch(sec, -1) {
		blocks = append(blocks, m[1])
	}
	return blocks
}

func TestREADMELibrarySnippet(t *testing.T) {
	t.Parallel()
	blocks := readmeBlocks(t, "The library in a page")
	require.Len(t, blocks, 2, "the section's Go blocks: the program, then the contracts")

	// The program is Example's body, one tab less indented.
	src, err := os.ReadFile("readme_test.go")
	require.NoError(t, err)
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, "readme_test.go", src, 0)
	require.NoError(t, err)
	var body string
	for _, d := range f.Decls {
		if fn, ok := d.(*ast.FuncDecl); ok && fn.Name.Name == "Example" {
			lo, hi := fset.Position(fn.Body.Lbrace).Offset+1, fset.Position(fn.Body.Rbrace).Offset
			body = strings.TrimPrefix(string(src[lo:hi]), "\n")
		}
	}
	require.NotEmpty(t, body)
	var want bytes.Buffer
	for _, line := range strings.SplitAfter(body, "\n") {
		want.WriteString(strings.TrimPrefix(line, "\t"))
	}
	assert.Equal(t, want.String(), blocks[0], "README's program must be Example's body")

	// Every method of the contracts block is declared so in package rl.
	contracts, err := os.ReadFile("../../rl/contracts.go")
	require.NoError(t, err)
	methods := 0
	for _, line := range strings.Split(blocks[1], "\n") {
		line, _, _ = strings.Cut(line, "//")
		line = strings.TrimSpace(line)
		if line == "" || strings.HasPrefix(line, "type ") || line == "}" {
			continue
		}
		methods++
		assert.Contains(t, string(contracts), "\t"+line+"\n", "README's contract %q is rl's", line)
	}
	assert.Equal(t, 8, methods, "Trainer's six methods and Sampler's two")
}
