package hf

import (
	"path/filepath"
	"strings"
)

// parseIndex reads model.safetensors.index.json: {"metadata": {...},
// "weight_map": {tensor: file}}. Files must be plain names in the same
// folder ending in .safetensors; the map must not be empty. metadata is
// not checked beyond being an object (total_size is informational).
func parseIndex(file string, data []byte) (map[string]string, error) {
	f, err := decodeObject(file, data)
	if err != nil {
		return nil, err
	}
	if _, err := f.object("metadata"); err != nil {
		return nil, err
	}
	wm := f.raw("weight_map")
	m, ok := wm.(map[string]any)
	if !ok {
		return nil, f.errf("weight_map", wm, "want an object mapping tensor names to file names")
	}
	if len(m) == 0 {
		return nil, f.errf("weight_map", wm, "lists no tensors")
	}
	out := make(map[string]string, len(m))
	for name, v := range m {
		s, ok := v.(string)
		if !ok {
			return nil, f.errf("weight_map."+name, v, "want a file name")
		}
		if s == "" || s != filepath.Base(s) || strings.ContainsAny(s, `/\`) || s == "." || s == ".." || !strings.HasSuffix(s, ".safetensors") {
			return nil, f.errf("weight_map."+name, v, "want a .safetensors file name in the model folder")
		}
		if name == "" {
			return nil, f.errf("weight_map", wm, "has an empty tensor name")
		}
		out[name] = s
	}
	if extra := f.unread(); len(extra) > 0 {
		return nil, f.errf(extra[0], f.m[extra[0]], "unknown field; want only metadata and weight_map")
	}
	return out, nil
}
