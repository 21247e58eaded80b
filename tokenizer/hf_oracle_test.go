package tokenizer_test

import (
	"errors"
	"fmt"
	"path/filepath"
	"sync"
	"testing"

	"github.com/tandemrl/tandem/internal/hforacle"
)

// hfOracle is one running testdata/hf/oracle.js: Hugging Face's tokenizers
// (npm tokenizers@0.23.2, the Rust crate) on one model's tokenizer.json,
// answering JSON lines in order. Not safe for concurrent use.
type hfOracle struct{ p *hforacle.Process }

// hfRequest is one request line (see oracle.js for the ops).
type hfRequest struct {
	Op    string   `json:"op"`
	Text  string   `json:"text"`
	IDs   []int    `json:"ids,omitempty"`
	Texts []string `json:"texts,omitempty"`
	Plain bool     `json:"plain,omitempty"` // "case": only ids and dec
}

// hfAnswer is one answer line; which fields are set depends on the op.
type hfAnswer struct {
	Error     string         `json:"error"`
	IDs       []int          `json:"ids"`
	IDsAdd    []int          `json:"ids_add"`
	IDsSplit  []int          `json:"ids_split"`
	Dec       string         `json:"dec"`
	DecSkip   string         `json:"dec_skip"`
	Texts     []string       `json:"texts"`
	IDsList   [][]int        `json:"ids_list"`
	DecList   []string       `json:"dec_list"`
	VocabSize int            `json:"vocab_size"`
	Added     []hfAddedToken `json:"added"`
	Vocab     map[string]int `json:"vocab"`
	Tokens    []*string      `json:"tokens"`
}

type hfAddedToken struct {
	ID         int    `json:"id"`
	Content    string `json:"content"`
	Special    bool   `json:"special"`
	Normalized bool   `json:"normalized"`
}

// startOracle starts the oracle for the model in modelDir; it is stopped
// when the test ends.
func startOracle(t testing.TB, hfDir, modelDir string) *hfOracle {
	t.Helper()
	// go test runs in the package folder. One thread for Hugging Face too;
	// the test runs the models side by side.
	p, err := hforacle.StartNode(filepath.Join("testdata", "hf", "oracle.js"), hfDir, modelDir)
	if err != nil {
		t.Fatalf("start the Hugging Face oracle: %v", err)
	}
	t.Cleanup(func() {
		if err := p.Close(); err != nil {
			t.Errorf("oracle exited: %v; stderr: %s", err, p.Stderr())
		}
	})
	return &hfOracle{p}
}

// call sends one request and reads its answer.
func (o *hfOracle) call(req hfRequest) (hfAnswer, error) {
	var a hfAnswer
	if err := o.p.Call(req, &a); err != nil {
		return a, err
	}
	return a, answerErr(a)
}

func (o *hfOracle) recv() (hfAnswer, error) {
	var a hfAnswer
	if err := o.p.Recv(&a); err != nil {
		return a, err
	}
	return a, answerErr(a)
}

func answerErr(a hfAnswer) error {
	if a.Error != "" {
		return fmt.Errorf("oracle: %s", a.Error)
	}
	return nil
}

// stream sends every request from a goroutine while it hands the answers,
// in order, to check on the calling goroutine, so Hugging Face and tandem
// work at the same time. It returns once every answer is read (or the first
// pipe error), and the sender has finished.
func (o *hfOracle) stream(reqs []hfRequest, check func(i int, a hfAnswer)) error {
	var (
		wg      sync.WaitGroup
		sendErr error
	)
	wg.Add(1)
	go func() {
		defer wg.Done()
		for _, r := range reqs {
			if sendErr = o.p.Send(r); sendErr != nil {
				return
			}
		}
		sendErr = o.p.Flush()
	}()
	var recvErr error
	for i := range reqs {
		a, err := o.recv()
		if err != nil && a.Error == "" { // a broken pipe or protocol: nothing more comes
			recvErr = err
			o.p.Kill() // it may be blocked writing what we no longer read; unblocks the sender
			break
		}
		if err != nil {
			recvErr = errors.Join(recvErr, fmt.Errorf("request %d: %w", i, err))
			continue
		}
		check(i, a)
	}
	wg.Wait()
	return errors.Join(recvErr, sendErr)
}
