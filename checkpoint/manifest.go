package checkpoint

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/tandemrl/tandem/checkpoint/archive"
	"github.com/tandemrl/tandem/policy"
)

// ManifestName is the file in every checkpoint folder that describes it.
const ManifestName = "manifest.json"

// ManifestFormat is the manifest format this package writes and reads.
const ManifestFormat = 1

// Bounds on what a manifest may hold.
const (
	MaxManifestSize = 1 << 20 // bytes of manifest.json
	MaxFiles        = 4096    // files per checkpoint
	MaxMetrics      = 1024    // metrics per checkpoint
	maxLabelLen     = 256     // base model and metric names
)

// Meta describes a checkpoint: what the caller gives [Store.Save].
type Meta struct {
	// Run names the run; see policy.ValidRunName.
	Run string `json:"run"`
	// Name names the checkpoint within its run and kind, e.g. "000017".
	Name string `json:"name"`
	// Kind is policy.SamplerWeights or policy.State.
	Kind policy.Kind `json:"kind"`
	// Version is the policy version the checkpoint holds (≥ 0).
	Version policy.Version `json:"version"`
	// Step is the training step at save time (≥ 0).
	Step int64 `json:"step"`
	// BaseModel names the frozen base model, e.g. "Qwen/Qwen3-8B".
	BaseModel string `json:"base_model,omitempty"`
	// Created is when the save completed; Save fills it in when zero.
	Created time.Time `json:"created"`
	// Metrics are numbers worth keeping with the checkpoint (reward,
	// loss…); they must be finite.
	Metrics map[string]float64 `json:"metrics,omitempty"`
}

// Validate reports the first field that cannot be saved, naming it and
// what is allowed. A zero Created is allowed.
func (m Meta) Validate() error {
	if err := validID(m.Run, m.Kind, m.Name); err != nil {
		return err
	}
	if m.Version < 0 {
		return fmt.Errorf("%w: version %d is negative", ErrBadMeta, m.Version)
	}
	if m.Step < 0 {
		return fmt.Errorf("%w: step %d is negative", ErrBadMeta, m.Step)
	}
	if err := validLabel("base model", m.BaseModel, true); err != nil {
		return err
	}
	if len(m.Metrics) > MaxMetrics {
		return fmt.Errorf("%w: %d metrics, at most %d allowed", ErrBadMeta, len(m.Metrics), MaxMetrics)
	}
	for k, v := range m.Metrics {
		if err := validLabel("metric name", k, false); err != nil {
			return err
		}
		if math.IsNaN(v) || math.IsInf(v, 0) {
			return fmt.Errorf("%w: metric %q is %v; metrics must be finite", ErrBadMeta, k, v)
		}
	}
	return nil
}

func validLabel(field, s string, emptyOK bool) error {
	if s == "" && !emptyOK {
		return fmt.Errorf("%w: %s is empty", ErrBadMeta, field)
	}
	if len(s) > maxLabelLen {
		return fmt.Errorf("%w: %s is %d bytes, at most %d allowed", ErrBadMeta, field, len(s), maxLabelLen)
	}
	for _, r := range s {
		if r < 0x20 || r == 0x7f || r == '\uFFFD' {
			return fmt.Errorf("%w: %s %q has control or invalid character %q", ErrBadMeta, field, s, r)
		}
	}
	return nil
}

// File is one file of a checkpoint as its manifest records it.
type File struct {
	// Name is the slash-separated path relative to the checkpoint folder.
	Name string `json:"name"`
	// Size is the length in bytes.
	Size int64 `json:"size"`
	// SHA256 is the lowercase hex SHA-256 of the contents.
	SHA256 string `json:"sha256"`
}

// Manifest is the content of a checkpoint's manifest.json.
type Manifest struct {
	// Format is ManifestFormat.
	Format int `json:"format"`
	Meta
	// Files lists every file of the checkpoint except the manifest,
	// sorted by name.
	Files []File `json:"files"`
}

// File returns the manifest entry for name.
func (m *Manifest) File(name string) (File, bool) {
	i, ok := slices.BinarySearchFunc(m.Files, name, func(f File, n string) int { return strings.Compare(f.Name, n) })
	if !ok {
		return File{}, false
	}
	return m.Files[i], true
}

// Size returns the total size of the checkpoint's files in bytes.
func (m *Manifest) Size() int64 {
	var n int64
	for _, f := range m.Files {
		n += f.Size
	}
	return n
}

// Validate checks the whole manifest: its metadata, a non-zero created
// time, and file entries that are safe names (no "..", no absolute paths,
// no segment starting with '.', not manifest.json), sorted and unique, with
// non-negative sizes and well-formed hashes. Errors wrap ErrCorrupt.
func (m *Manifest) Validate() error {
	if m.Format != ManifestFormat {
		return fmt.Errorf("%w: manifest format %d, want %d", ErrCorrupt, m.Format, ManifestFormat)
	}
	if err := m.Meta.Validate(); err != nil {
		return fmt.Errorf("%w: manifest: %w", ErrCorrupt, err)
	}
	if m.Created.IsZero() {
		return fmt.Errorf("%w: manifest: created time is missing", ErrCorrupt)
	}
	if len(m.Files) > MaxFiles {
		return fmt.Errorf("%w: manifest lists %d files, at most %d allowed", ErrCorrupt, len(m.Files), MaxFiles)
	}
	for i, f := range m.Files {
		if err := validFileName(f.Name); err != nil {
			return fmt.Errorf("%w: manifest file %d: %w", ErrCorrupt, i, err)
		}
		if i > 0 && m.Files[i-1].Name >= f.Name {
			return fmt.Errorf("%w: manifest files not sorted and unique at %q", ErrCorrupt, f.Name)
		}
		if f.Size < 0 {
			return fmt.Errorf("%w: manifest file %q has size %d", ErrCorrupt, f.Name, f.Size)
		}
		if !isHexSHA256(f.SHA256) {
			return fmt.Errorf("%w: manifest file %q: sha256 %q is not 64 lowercase hex digits", ErrCorrupt, f.Name, f.SHA256)
		}
	}
	return nil
}

// validFileName checks a checkpoint file name: a safe archive name whose
// segments do not start with '.', other than the manifest itself.
func validFileName(name string) error {
	if err := archive.CheckName(name); err != nil {
		return err
	}
	if name == ManifestName {
		return fmt.Errorf("%q is reserved for the manifest", ManifestName)
	}
	for seg := range strings.SplitSeq(name, "/") {
		if strings.HasPrefix(seg, ".") {
			return fmt.Errorf("name %q has a segment starting with '.'", name)
		}
	}
	return nil
}

func isHexSHA256(s string) bool {
	if len(s) != 64 {
		return false
	}
	for i := range len(s) {
		c := s[i]
		if (c < '0' || c > '9') && (c < 'a' || c > 'f') {
			return false
		}
	}
	return true
}

// ParseManifest decodes and validates a manifest. It reads at most
// MaxManifestSize bytes; unknown fields are ignored so newer writers stay
// readable. Errors wrap ErrCorrupt.
func ParseManifest(data []byte) (Manifest, error) {
	if len(data) > MaxManifestSize {
		return Manifest{}, fmt.Errorf("%w: manifest is %d bytes, at most %d allowed", ErrCorrupt, len(data), MaxManifestSize)
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	var m Manifest
	if err := dec.Decode(&m); err != nil {
		return Manifest{}, fmt.Errorf("%w: manifest does not decode: %v", ErrCorrupt, err)
	}
	if _, err := dec.Token(); err != io.EOF {
		return Manifest{}, fmt.Errorf("%w: manifest has data after the JSON object", ErrCorrupt)
	}
	if err := m.Validate(); err != nil {
		return Manifest{}, err
	}
	if len(m.Metrics) == 0 {
		m.Metrics = nil // "metrics": {} and an absent field mean the same
	}
	return m, nil
}

// Encode returns the manifest as indented JSON with a final newline.
func (m *Manifest) Encode() ([]byte, error) {
	b, err := json.MarshalIndent(m, "", "  ")
	if err != nil {
		return nil, fmt.Errorf("checkpoint: encode manifest: %w", err)
	}
	return append(b, '\n'), nil
}
