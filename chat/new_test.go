package chat

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/tandemrl/tandem/tokenizer"
)

func TestDefaultName(t *testing.T) {
	t.Parallel()
	assert.Equal(t, "jinja", DefaultName(tokenizer.Config{ChatTemplate: "{{ messages }}"}))
	assert.Equal(t, "role_colon", DefaultName(tokenizer.Config{}))
}
