package server_test

import (
	"encoding/json"
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/tandemrl/tandem/server"
	"github.com/tandemrl/tandem/server/servertest"
	"github.com/tandemrl/tandem/wire"
)

// get_info's model_data.tokenizer_id is what the SDK's get_tokenizer loads:
// the model's TokenizerID when configured, else its name.
func TestGetInfoTokenizerID(t *testing.T) {
	t.Parallel()
	for _, c := range []struct{ configured, want string }{{"", base}, {"/models/qwen3", "/models/qwen3"}} {
		h := newHarness(t, func(cfg *server.Config) {
			cfg.Models = []server.ModelSpec{{Name: base, VocabSize: servertest.Vocab, TokenizerID: c.configured}}
		})
		model := h.model(keyA, h.session(keyA), 0)
		var info wire.GetInfoResponse
		require.NoError(t, json.Unmarshal(h.post(keyA, "get_info", fmt.Sprintf(`{"model_id":%q,"type":"get_info"}`, model)), &info))
		assert.Equal(t, c.want, info.ModelData.TokenizerID)
		assert.Equal(t, base, info.ModelData.ModelName)
	}
}
