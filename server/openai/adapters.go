package openai

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"net/http"
	"os"
	"path/filepath"
	"slices"

	"github.com/tandemrl/tandem/rl"
)

// adapterConfigFile is the file that makes a folder a PEFT adapter.
const adapterConfigFile = "adapter_config.json"

func invalidInput(format string, args ...any) *APIError {
	return &APIError{Status: http.StatusBadRequest, Type: typeInvalidInput, Message: fmt.Sprintf(format, args...)}
}

// loadLoRA is POST /v1/load_lora_adapter: vLLM's checks, in vLLM's order
// (names, duplicate, folder, load), with its messages and statuses. The
// adapter is loaded before the call returns, so a bad adapter fails here,
// not on first use. Answers vLLM's plain-text success line.
func (h *Handler) loadLoRA(ctx context.Context, body []byte) (reply, error) {
	var req LoadLoRARequest
	if err := decode(body, &req); err != nil {
		return reply{}, err
	}
	if req.LoraName == "" || req.LoraPath == "" {
		return reply{}, invalidInput("Both 'lora_name' and 'lora_path' must be provided.")
	}
	if req.LoadInplace {
		return reply{}, &APIError{Status: http.StatusBadRequest, Type: typeInvalidInput, Param: "load_inplace",
			Message: "load_inplace is not supported by tandem serve: load each adapter version under a name of its own and unload the old one"}
	}
	b, err := h.adapterBase(req.BaseModelName)
	if err != nil {
		return reply{}, err
	}
	dir, err := filepath.Abs(req.LoraPath)
	if err != nil {
		return reply{}, notFound("", "Loading lora %s failed: No adapter found for %s", req.LoraName, req.LoraPath)
	}
	// Reserve the name (a nil sampler means loading), so two loads of one
	// name cannot both succeed.
	h.mu.Lock()
	_, dup := h.adapters[req.LoraName]
	_, isBase := h.bases[req.LoraName]
	switch {
	case dup || isBase:
		h.mu.Unlock()
		return reply{}, invalidInput("The lora adapter '%s' has already been loaded. If you want to load the adapter in place, set 'load_inplace' to True.", req.LoraName)
	case len(h.adapters) >= h.opts.MaxAdapters:
		h.mu.Unlock()
		return reply{}, invalidInput("cannot load lora adapter '%s': %d adapters are loaded, this server's limit; unload one first", req.LoraName, h.opts.MaxAdapters)
	}
	a := &adapter{name: req.LoraName, path: dir, base: b, created: h.opts.Now().Unix()}
	h.adapters[req.LoraName] = a
	h.mu.Unlock()

	s, err := h.openAdapter(ctx, b.Name, dir, req)
	h.mu.Lock()
	defer h.mu.Unlock()
	if err != nil {
		delete(h.adapters, req.LoraName)
		return reply{}, err
	}
	a.sampler = s
	return reply{text: fmt.Sprintf("Success: LoRA adapter '%s' added successfully.", req.LoraName)}, nil
}

func (h *Handler) openAdapter(ctx context.Context, base, dir string, req LoadLoRARequest) (rl.Sampler, error) {
	if st, err := os.Stat(filepath.Join(dir, adapterConfigFile)); err != nil || st.IsDir() {
		return nil, notFound("", "Loading lora %s failed: No adapter found for %s", req.LoraName, req.LoraPath)
	}
	s, err := h.opts.LoadAdapter(ctx, base, dir)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return nil, notFound("", "Loading lora %s failed: No adapter found for %s", req.LoraName, req.LoraPath)
	case err != nil:
		return nil, internal("Loading lora %s failed: %v", req.LoraName, err)
	}
	return s, nil
}

// adapterBase is the base an adapter is loaded over: the one named, or
// the only one.
func (h *Handler) adapterBase(name string) (*base, error) {
	if name == "" {
		if len(h.order) > 1 {
			return nil, &APIError{Status: http.StatusBadRequest, Type: typeInvalidInput, Param: "base_model_name",
				Message: fmt.Sprintf("this server serves %d base models %v: name the one the adapter adapts in base_model_name", len(h.order), h.order)}
		}
		return h.bases[h.order[0]], nil
	}
	b, ok := h.bases[name]
	if !ok {
		return nil, notFound("base_model_name", "The model `%s` does not exist.", name)
	}
	return b, nil
}

// unloadLoRA is POST /v1/unload_lora_adapter. Requests already running on
// the adapter finish on it; later ones get 404.
func (h *Handler) unloadLoRA(_ context.Context, body []byte) (reply, error) {
	var req UnloadLoRARequest
	if err := decode(body, &req); err != nil {
		return reply{}, err
	}
	if req.LoraName == "" {
		return reply{}, invalidInput("'lora_name' needs to be provided to unload a LoRA adapter.")
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	a, ok := h.adapters[req.LoraName]
	if !ok || a.sampler == nil {
		return reply{}, notFound("", "The lora adapter '%s' cannot be found.", req.LoraName)
	}
	delete(h.adapters, req.LoraName)
	return reply{text: fmt.Sprintf("Success: LoRA adapter '%s' removed successfully.", req.LoraName)}, nil
}

func permission(created int64, id string) []ModelPermission {
	return []ModelPermission{{
		ID: "modelperm-" + id, Object: "model_permission", Created: created,
		AllowSampling: true, AllowLogprobs: true, AllowView: true, Organization: "*",
	}}
}

// models is GET /v1/models: the bases, then the loaded adapters by name.
func (h *Handler) models(context.Context, []byte) (reply, error) {
	list := ModelList{Object: "list", Data: []ModelCard{}}
	for _, name := range h.order {
		b := h.bases[name]
		root, n := b.Root, b.MaxModelLen
		list.Data = append(list.Data, ModelCard{ID: name, Object: "model", Created: b.created, OwnedBy: "vllm",
			Root: &root, MaxModelLen: &n, Permission: permission(b.created, name)})
	}
	h.mu.Lock()
	var ads []*adapter
	for _, a := range h.adapters {
		if a.sampler != nil {
			ads = append(ads, a)
		}
	}
	h.mu.Unlock()
	slices.SortFunc(ads, func(x, y *adapter) int {
		switch {
		case x.name < y.name:
			return -1
		case x.name > y.name:
			return 1
		}
		return 0
	})
	for _, a := range ads {
		root, parent := a.path, a.base.Name
		list.Data = append(list.Data, ModelCard{ID: a.name, Object: "model", Created: a.created, OwnedBy: "vllm",
			Root: &root, Parent: &parent, Permission: permission(a.created, a.name)})
	}
	return reply{json: list}, nil
}
