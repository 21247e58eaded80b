package wire

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestDecodeWeightsInfoResponse(t *testing.T) {
	t.Parallel()
	// The SDK's WeightsInfoResponse leaves the train_* flags optional;
	// absent or null they mean true (create_training_client_from_state).
	r, err := DecodeWeightsInfoResponse([]byte(`{"base_model":"Qwen/Qwen3-8B","is_lora":true,"lora_rank":16,"train_mlp":false,"train_attn":null}`))
	require.NoError(t, err)
	assert.Equal(t, WeightsInfoResponse{BaseModel: "Qwen/Qwen3-8B", IsLora: true, LoraRank: 16, TrainUnembed: true, TrainMLP: false, TrainAttn: true}, r)

	for body, field := range map[string]string{
		`{"is_lora":true,"lora_rank":8}`:                      "base_model",
		`{"base_model":"","is_lora":false}`:                   "base_model",
		`{"base_model":"b","is_lora":true}`:                   "lora_rank",
		`{"base_model":"b","is_lora":true,"lora_rank":0}`:     "lora_rank",
		`{"base_model":"b","is_lora":"yes"}`:                  "is_lora",
		`{"base_model":"b","is_lora":false,"train_mlp":1}`:    "train_mlp",
		`{"base_model":"b","is_lora":true,"lora_rank":1e300}`: "lora_rank",
	} {
		_, err := DecodeWeightsInfoResponse([]byte(body))
		var fe *FieldError
		require.ErrorAs(t, err, &fe, body)
		assert.Equal(t, field, fe.Field, body)
	}
	// A full-weights checkpoint needs no rank.
	r, err = DecodeWeightsInfoResponse([]byte(`{"base_model":"b","is_lora":false}`))
	require.NoError(t, err)
	assert.False(t, r.IsLora)
}
