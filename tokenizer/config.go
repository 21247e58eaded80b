package tokenizer

import (
	"strconv"
)

const configFile = "tokenizer_config.json"

// parseConfig reads the fields of tokenizer_config.json that Config holds;
// the others are ignored.
func parseConfig(data []byte) (Config, error) {
	var cfg Config
	l := loader{file: configFile}
	r := &jreader{file: configFile, data: data}
	top, err := r.document(nil)
	if err != nil {
		return cfg, err
	}
	if err := l.object(&top, ""); err != nil {
		return cfg, err
	}
	for _, f := range []struct {
		key string
		dst *string
	}{
		{"bos_token", &cfg.BOSToken},
		{"eos_token", &cfg.EOSToken},
		{"pad_token", &cfg.PadToken},
		{"unk_token", &cfg.UnkToken},
	} {
		if *f.dst, err = l.tokenText(&top, f.key); err != nil {
			return cfg, err
		}
	}
	for _, f := range []struct {
		key string
		dst **bool
	}{
		{"add_bos_token", &cfg.AddBOSToken},
		{"add_eos_token", &cfg.AddEOSToken},
	} {
		m := top.get(f.key)
		if isNull(m) {
			continue
		}
		if m.kind != jBool {
			return cfg, l.errf(f.key, "want true or false, got %s", describe(m))
		}
		b := m.b
		*f.dst = &b
	}
	if cfg.TokenizerClass, _, err = l.optStr(&top, "tokenizer_class", ""); err != nil {
		return cfg, err
	}
	if m := top.get("model_max_length"); m != nil && m.kind == jNumber {
		if n, err := strconv.ParseInt(m.s, 10, 0); err == nil && n >= 0 {
			cfg.ModelMaxLength = int(n)
		}
	}
	if err := l.chatTemplates(&top, &cfg); err != nil {
		return cfg, err
	}
	return cfg, nil
}

// tokenText reads a special token given as a string or as an AddedToken
// object ({"content": ...}).
func (l loader) tokenText(v *jv, key string) (string, error) {
	m := v.get(key)
	switch {
	case isNull(m):
		return "", nil
	case m.kind == jString:
		return m.s, nil
	case m.kind == jObject:
		return l.str(m, "content", key)
	}
	return "", l.errf(key, "want a string or an object with a content, got %s", describe(m))
}

// chatTemplates reads chat_template: a string, or a list of
// {"name": ..., "template": ...}.
func (l loader) chatTemplates(v *jv, cfg *Config) error {
	const key = "chat_template"
	m := v.get(key)
	switch {
	case isNull(m):
		return nil
	case m.kind == jString:
		cfg.ChatTemplate = m.s
		return nil
	case m.kind != jArray:
		return l.errf(key, "want a string or a list of named templates, got %s", describe(m))
	}
	cfg.ChatTemplates = make(map[string]string, len(m.arr))
	for i := range m.arr {
		p := index(key, i)
		e := &m.arr[i]
		if err := l.object(e, p); err != nil {
			return err
		}
		name, err := l.str(e, "name", p)
		if err != nil {
			return err
		}
		tmpl, err := l.str(e, "template", p)
		if err != nil {
			return err
		}
		cfg.ChatTemplates[name] = tmpl
	}
	cfg.ChatTemplate = cfg.ChatTemplates["default"]
	return nil
}
