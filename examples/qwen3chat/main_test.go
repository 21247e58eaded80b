package main

import (
	"bytes"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/tandemrl/tandem/internal/hforacle"
)

func TestQwen3Chat(t *testing.T) {
	dir := hforacle.Model(t, "qwen3")
	var out bytes.Buffer
	require.NoError(t, run(&out, dir))
	assert.Contains(t, out.String(), "<|im_start|>user\nWhat is 17 + 25?<|im_end|>\n<|im_start|>assistant\n")
	assert.Contains(t, out.String(), "stop tokens: [151645")
	assert.Contains(t, out.String(), "ended by stop_sequence")
	assert.Contains(t, out.String(), `content: "42"`)
	assert.Contains(t, out.String(), `reasoning: "17 + 25: 7 + 5 = 12, carry 1; 1 + 2 + 1 = 4."`)
}
