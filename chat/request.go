package chat

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
)

// TemplateRequest is one apply_chat_template call read from JSON, as
// `tandem tokenize` reads a {"messages": [...], ...} line.
type TemplateRequest struct {
	// Messages is the "messages" array, kept as given (every field, key
	// order).
	Messages json.RawMessage
	// Options holds "add_generation_prompt", "continue_final_message",
	// "tools", "documents" and, as Kwargs, the members of
	// "chat_template_kwargs" (vLLM's chat API) and every other key
	// ("enable_thinking", "date_string", ...), as transformers passes extra
	// keyword arguments to the template.
	Options TemplateOptions
}

// requestArgs are apply_chat_template arguments that are not template
// variables; a request may carry them, and they are not passed on.
var requestArgs = map[string]bool{"tokenize": true, "add_special_tokens": true}

// DecodeTemplateRequest reads a JSON object holding "messages" (an array of
// objects) and apply_chat_template's other arguments.
func DecodeTemplateRequest(data []byte) (TemplateRequest, error) {
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(data, &fields); err != nil {
		return TemplateRequest{}, fmt.Errorf("chat: template request: %w", err)
	}
	var req TemplateRequest
	raw, ok := fields["messages"]
	if !ok {
		return TemplateRequest{}, errors.New(`chat: template request has no "messages"`)
	}
	if t := bytes.TrimSpace(raw); len(t) == 0 || t[0] != '[' {
		return TemplateRequest{}, errors.New(`chat: "messages" must be an array of message objects`)
	}
	req.Messages = raw
	addKwarg := func(k string, v json.RawMessage) error {
		if req.Options.Kwargs == nil {
			req.Options.Kwargs = map[string]any{}
		}
		if _, dup := req.Options.Kwargs[k]; dup {
			return fmt.Errorf("chat: template request: %q is given both at the top level and in chat_template_kwargs", k)
		}
		req.Options.Kwargs[k] = v
		return nil
	}
	for k, v := range fields {
		var err error
		switch k {
		case "messages":
		case "add_generation_prompt":
			err = json.Unmarshal(v, &req.Options.AddGenerationPrompt)
		case "continue_final_message":
			err = json.Unmarshal(v, &req.Options.ContinueFinalMessage)
		case "tools":
			req.Options.Tools = nullable(v)
		case "documents":
			req.Options.Documents = nullable(v)
		case "chat_template_kwargs":
			var kw map[string]json.RawMessage
			if err = json.Unmarshal(v, &kw); err == nil {
				for name, val := range kw {
					if err = addKwarg(name, val); err != nil {
						return TemplateRequest{}, err
					}
				}
			}
		default:
			if !requestArgs[k] {
				if err := addKwarg(k, v); err != nil {
					return TemplateRequest{}, err
				}
			}
		}
		if err != nil {
			return TemplateRequest{}, fmt.Errorf("chat: template request: %q: %w", k, err)
		}
	}
	return req, nil
}

// nullable maps JSON null to "absent".
func nullable(v json.RawMessage) json.RawMessage {
	if bytes.Equal(bytes.TrimSpace(v), []byte("null")) {
		return nil
	}
	return v
}
