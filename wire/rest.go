package wire

import "time"

// Checkpoint is one entry of a checkpoint listing (types/checkpoint.py).
// CheckpointID is "<kind>/<name>"; CheckpointType is "training" or "sampler".
type Checkpoint struct {
	CheckpointID   string     `json:"checkpoint_id"`
	CheckpointType string     `json:"checkpoint_type"`
	Time           time.Time  `json:"time"`
	TinkerPath     string     `json:"tinker_path"`
	ExpiresAt      *time.Time `json:"expires_at,omitempty"` // SDK ≥ 0.9.0; absent: never
}

// CheckpointFromPath fills a Checkpoint from its path, creation time and
// expiry (zero: never).
func CheckpointFromPath(p TinkerPath, created, expires time.Time) Checkpoint {
	c := Checkpoint{CheckpointID: p.CheckpointID(), CheckpointType: p.CheckpointType(), Time: created.UTC(), TinkerPath: p.String()}
	if !expires.IsZero() {
		e := expires.UTC()
		c.ExpiresAt = &e
	}
	return c
}

// CheckpointsListResponse answers GET training_runs/{id}/checkpoints.
type CheckpointsListResponse struct {
	Checkpoints []Checkpoint `json:"checkpoints"`
	// Cursor is set for the paginated listing of all of a key's
	// checkpoints (GET checkpoints), not for one run's.
	Cursor *Cursor `json:"cursor,omitempty"`
}

// ListSessionsResponse answers GET sessions: the ids of the key's live
// sessions.
type ListSessionsResponse struct {
	Sessions []string `json:"sessions"`
}

// GetSessionResponse answers GET sessions/{id}: the models (training runs)
// and sampling sessions made in it.
type GetSessionResponse struct {
	TrainingRunIDs []string `json:"training_run_ids"`
	SamplerIDs     []string `json:"sampler_ids"`
}

// Cursor is the pagination of a listing.
type Cursor struct {
	Offset     int `json:"offset"`
	Limit      int `json:"limit"`
	TotalCount int `json:"total_count"`
}

// TrainingRun describes one model (types/training_run.py).
type TrainingRun struct {
	TrainingRunID         string            `json:"training_run_id"`
	BaseModel             string            `json:"base_model"`
	ModelOwner            string            `json:"model_owner"`
	IsLora                bool              `json:"is_lora"`
	Corrupted             bool              `json:"corrupted"`
	LoraRank              *int              `json:"lora_rank,omitempty"`
	LastRequestTime       time.Time         `json:"last_request_time"`
	LastCheckpoint        *Checkpoint       `json:"last_checkpoint,omitempty"`
	LastSamplerCheckpoint *Checkpoint       `json:"last_sampler_checkpoint,omitempty"`
	UserMetadata          map[string]string `json:"user_metadata,omitempty"`
}

// TrainingRunsResponse answers GET training_runs?limit=&offset=.
type TrainingRunsResponse struct {
	TrainingRuns []TrainingRun `json:"training_runs"`
	Cursor       Cursor        `json:"cursor"`
}

// ModelData is part of GetInfoResponse.
type ModelData struct {
	Arch        string `json:"arch,omitempty"`
	ModelName   string `json:"model_name,omitempty"`
	TokenizerID string `json:"tokenizer_id,omitempty"`
}

// GetInfoResponse answers POST get_info.
type GetInfoResponse struct {
	Type      string    `json:"type"`
	ModelData ModelData `json:"model_data"`
	ModelID   string    `json:"model_id"`
	IsLora    bool      `json:"is_lora"`
	LoraRank  int       `json:"lora_rank,omitempty"`
	ModelName string    `json:"model_name,omitempty"`
}

// UnloadModelResponse is the result of an unload_model future.
type UnloadModelResponse struct {
	ModelID string `json:"model_id"`
	Type    string `json:"type"`
}

// TelemetryResponse answers POST telemetry: {"status":"accepted"}.
type TelemetryResponse struct {
	Status string `json:"status"`
}
