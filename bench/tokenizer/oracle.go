package main

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/tandemrl/tandem/internal/hforacle"
)

// hfOracle is tokenizer/testdata/hf/oracle.js running Hugging Face's
// tokenizers on one model, asked one request at a time. It runs with
// hforacle.OneThread, so encodeBatch uses one thread; an awaited encode()
// runs on one libuv worker thread while the main thread waits.
type hfOracle struct{ *hforacle.Process }

type hfRequest struct {
	Op    string   `json:"op"`
	Texts []string `json:"texts,omitempty"`
	IDs   [][]int  `json:"ids,omitempty"`
}

type hfAnswer struct {
	Error   string  `json:"error"`
	IDsList [][]int `json:"ids_list"`
	Words   int     `json:"words"`
	NS      int64   `json:"ns"`
	BatchNS int64   `json:"batch_ns"`
	Tokens  int     `json:"tokens"`
}

// hfThreads says how the oracle is held to one thread.
const hfThreads = hforacle.OneThread

func startOracle(script, hfDir, modelDir string) (*hfOracle, error) {
	p, err := hforacle.StartNode(script, hfDir, modelDir)
	if err != nil {
		return nil, err
	}
	return &hfOracle{p}, nil
}

func (o *hfOracle) call(req hfRequest) (hfAnswer, error) {
	var a hfAnswer
	if err := o.Call(req, &a); err != nil {
		return a, err
	}
	if a.Error != "" {
		return a, fmt.Errorf("oracle %s: %s", req.Op, a.Error)
	}
	return a, nil
}

// locate finds the oracle's folder (what .ci/hf-oracle prints) and the
// oracle script (tokenizer/testdata/hf/oracle.js under the module root, which
// is searched for upward from the working directory).
func locate(hfDir, script string) (string, string, error) {
	if hfDir == "" {
		hfDir = hforacle.Dir()
	}
	if err := hforacle.NodeReady(hfDir); err != nil {
		return "", "", err
	}
	if script == "" {
		wd, err := os.Getwd()
		if err != nil {
			return "", "", err
		}
		for dir := wd; ; dir = filepath.Dir(dir) {
			if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
				script = filepath.Join(dir, "tokenizer", "testdata", "hf", "oracle.js")
				break
			}
			if filepath.Dir(dir) == dir {
				return "", "", errors.New("not inside the tandem module: pass -oracle PATH/TO/oracle.js")
			}
		}
	}
	if _, err := os.Stat(script); err != nil {
		return "", "", fmt.Errorf("oracle script: %w", err)
	}
	return hfDir, script, nil
}
