// Package hforacle finds the Hugging Face oracle that .ci/hf-oracle installs
// (the tokenizers npm package and the real model files) and talks to the
// scripts that run it: child processes answering JSON lines in order. The
// tokenizer and chat differential tests, their benchmark and the examples
// share it.
package hforacle

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// Install is what to do when something is missing.
const Install = "run .ci/hf-oracle (Node.js 20, npm) and set TANDEM_HF_DIR to the folder it prints"

// Dir is the folder .ci/hf-oracle installs into: $TANDEM_HF_DIR, else
// ~/.cache/tandem/hf.
func Dir() string {
	if d := os.Getenv("TANDEM_HF_DIR"); d != "" {
		return d
	}
	home, _ := os.UserHomeDir()
	return filepath.Join(home, ".cache", "tandem", "hf")
}

// ModelDir is the folder of one installed model (qwen3, llama3_1,
// deepseek_v3, gemma3): Dir()/models/name, holding tokenizer.json and
// tokenizer_config.json.
func ModelDir(name string) string {
	return filepath.Join(Dir(), "models", name)
}

// NodeReady says what is missing for the node oracle in hfDir: nil when
// node is in PATH and hfDir holds the tokenizers npm package.
func NodeReady(hfDir string) error {
	var errs []error
	if _, err := exec.LookPath("node"); err != nil {
		errs = append(errs, errors.New("no node (Node.js 20) in PATH"))
	}
	if _, err := os.Stat(filepath.Join(hfDir, "node_modules", "tokenizers", "package.json")); err != nil {
		errs = append(errs, fmt.Errorf("no Hugging Face tokenizers npm package in %s", hfDir))
	}
	if len(errs) == 0 {
		return nil
	}
	return fmt.Errorf("%w: %s", errors.Join(errs...), Install)
}

// Need skips t, or fails it under CI=true, where every oracle must be
// installed.
func Need(t testing.TB, format string, args ...any) {
	t.Helper()
	if os.Getenv("CI") == "true" {
		t.Fatalf("CI=true and "+format, args...)
	}
	t.Skipf(format, args...)
}

// Model returns ModelDir(name) when it holds tokenizer.json and
// tokenizer_config.json; else it skips t (fails it under CI=true).
func Model(t testing.TB, name string) string {
	t.Helper()
	dir := ModelDir(name)
	for _, f := range []string{"tokenizer.json", "tokenizer_config.json"} {
		if _, err := os.Stat(filepath.Join(dir, f)); err != nil {
			Need(t, "no %s model in %s (%v): %s", name, dir, err, Install)
		}
	}
	return dir
}

// NodePackage returns Dir()/node_modules when node is in PATH and the npm
// package pkg is installed there (.ci/hf-oracle installs the project's npm
// peers: tokenizers, openai); else it skips t (fails it under CI=true).
// Run scripts with NODE_PATH set to it.
func NodePackage(t testing.TB, pkg string) string {
	t.Helper()
	if _, err := exec.LookPath("node"); err != nil {
		Need(t, "no node (Node.js 20) in PATH: %s", Install)
	}
	nm := filepath.Join(Dir(), "node_modules")
	if _, err := os.Stat(filepath.Join(nm, pkg, "package.json")); err != nil {
		Need(t, "no npm package %s in %s: %s", pkg, nm, Install)
	}
	return nm
}

// Node returns Dir() when node and the tokenizers npm package are there
// (NodeReady); else it skips t (fails it under CI=true).
func Node(t testing.TB) string {
	t.Helper()
	dir := Dir()
	if err := NodeReady(dir); err != nil {
		Need(t, "%v", err)
	}
	return dir
}
