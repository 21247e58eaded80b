package hforacle

import (
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

func TestDir(t *testing.T) {
	t.Setenv("TANDEM_HF_DIR", "/x/hf")
	if got := ModelDir("qwen3"); got != filepath.Join("/x/hf", "models", "qwen3") {
		t.Fatalf("ModelDir = %q", got)
	}
	if err := NodeReady("/x/hf"); err == nil || !strings.Contains(err.Error(), ".ci/hf-oracle") {
		t.Fatalf("NodeReady = %v", err)
	}
}

// cat answers each line with itself, which is enough to check the pipe.
func TestProcess(t *testing.T) {
	if _, err := exec.LookPath("cat"); err != nil {
		t.Skip("no cat")
	}
	p, err := Start([]string{"X=1"}, "cat")
	if err != nil {
		t.Fatal(err)
	}
	type msg struct{ S string }
	var got msg
	if err := p.Call(msg{"a<b>"}, &got); err != nil || got.S != "a<b>" {
		t.Fatalf("Call = %v, %+v", err, got)
	}
	for _, s := range []string{"x", "y"} {
		if err := p.Send(msg{s}); err != nil {
			t.Fatal(err)
		}
	}
	if err := p.Flush(); err != nil {
		t.Fatal(err)
	}
	for _, s := range []string{"x", "y"} {
		if err := p.Recv(&got); err != nil || got.S != s {
			t.Fatalf("Recv = %v, %+v", err, got)
		}
	}
	if err := p.Close(); err != nil {
		t.Fatal(err)
	}
	if err := p.Close(); err != nil {
		t.Fatal(err)
	}
}
