package hf

import (
	"math"
	"reflect"

	"github.com/tandemrl/tandem/engine"
)

// parseRope reads rope_theta and rope_scaling (older spelling) or
// rope_parameters (transformers v5); when both are given they must agree.
func parseRope(f *fields, mc *modelConfig) error {
	hasOldTheta := f.present("rope_theta")
	oldTheta, err := f.number("rope_theta", 10000)
	if err != nil {
		return err
	}
	rs, err := f.object("rope_scaling")
	if err != nil {
		return err
	}
	oldScaling, err := parseScaling(rs, mc.maxPos, false)
	if err != nil {
		return err
	}
	rp, err := f.object("rope_parameters")
	if err != nil {
		return err
	}
	theta, scaling := oldTheta, oldScaling
	if rp != nil {
		for k, v := range rp.m {
			if _, nested := v.(map[string]any); nested {
				return rp.errf(k, v, "per-layer-type RoPE parameters are not supported; want one flat object")
			}
		}
		if theta, err = rp.number("rope_theta", 10000); err != nil {
			return err
		}
		if scaling, err = parseScaling(rp, mc.maxPos, true); err != nil {
			return err
		}
		if hasOldTheta && theta != oldTheta {
			return rp.errf("rope_theta", rp.m["rope_theta"], "contradicts rope_theta %v", oldTheta)
		}
		if rs != nil && !reflect.DeepEqual(scaling, oldScaling) {
			return rp.errf("rope_type", rp.m["rope_type"], "contradicts rope_scaling")
		}
	}
	if theta <= 0 {
		return f.errf("rope_theta", theta, "must be > 0")
	}
	mc.cfg.RopeTheta, mc.cfg.Rope = theta, scaling
	return nil
}

// parseScaling reads a rope_scaling (or rope_parameters) object: nil or
// rope_type "default" give nil. inParams marks rope_parameters, where
// rope_theta lives too.
func parseScaling(o *fields, maxPos int, inParams bool) (*engine.RopeScaling, error) {
	if o == nil {
		return nil, nil
	}
	if inParams {
		o.used["rope_theta"] = true
	}
	kind, err := o.str("rope_type", "")
	if err != nil {
		return nil, err
	}
	old, err := o.str("type", "")
	if err != nil {
		return nil, err
	}
	if kind != "" && old != "" && kind != old {
		return nil, o.errf("type", old, "contradicts rope_type %q", kind)
	}
	if kind == "" {
		kind = old
	}
	if kind == "" {
		kind = "default"
	}
	r := &engine.RopeScaling{Type: kind}
	num := func(k string, def float64, positive bool) (float64, error) {
		x, err := o.number(k, def)
		if err == nil && positive && x <= 0 {
			err = o.errf(k, o.m[k], "must be > 0")
		}
		return x, err
	}
	needed := func(k string) error {
		if !o.present(k) {
			return o.errf(k, nil, "missing; rope_type %q requires it", kind)
		}
		return nil
	}
	switch kind {
	case "default":
		r = nil
	case "linear":
		if err := needed("factor"); err != nil {
			return nil, err
		}
		if r.Factor, err = num("factor", 0, true); err != nil {
			return nil, err
		}
	case "llama3":
		for _, k := range []string{"factor", "low_freq_factor", "high_freq_factor", "original_max_position_embeddings"} {
			if err := needed(k); err != nil {
				return nil, err
			}
		}
		if r.Factor, err = num("factor", 0, true); err != nil {
			return nil, err
		}
		if r.LowFreqFactor, err = num("low_freq_factor", 0, true); err != nil {
			return nil, err
		}
		if r.HighFreqFactor, err = num("high_freq_factor", 0, true); err != nil {
			return nil, err
		}
		if r.HighFreqFactor <= r.LowFreqFactor {
			return nil, o.errf("high_freq_factor", o.m["high_freq_factor"], "must exceed low_freq_factor %v", r.LowFreqFactor)
		}
		if r.OriginalContext, err = o.integer("original_max_position_embeddings", 0); err != nil {
			return nil, err
		}
		if r.OriginalContext < 1 {
			return nil, o.errf("original_max_position_embeddings", o.m["original_max_position_embeddings"], "must be ≥ 1")
		}
	case "yarn":
		if err := parseYarn(o, r, maxPos); err != nil {
			return nil, err
		}
	default:
		return nil, o.errf("rope_type", kind, "not supported; want one of %s", oneOf("default", "linear", "llama3", "yarn"))
	}
	if extra := o.unread(); len(extra) > 0 {
		return nil, o.errf(extra[0], o.m[extra[0]], "not a parameter of rope_type %q (or not supported)", kind)
	}
	return r, nil
}

// parseYarn fills a yarn scaling with every default resolved, so the
// engine does not depend on max_position_embeddings (which the loader may
// cap): OriginalContext is the length L of the correction range —
// original_max_position_embeddings when given (transformers ≥ 4.51, which
// then also requires factor = max_position_embeddings / L; a config where
// they differ is rejected as ambiguous between versions), else
// max_position_embeddings. AttentionFactor defaults to 0.1·ln(factor)+1,
// BetaFast to 32, BetaSlow to 1 (a 0 or null means the default, as in
// transformers).
func parseYarn(o *fields, r *engine.RopeScaling, maxPos int) error {
	if !o.present("factor") {
		return o.errf("factor", nil, "missing; rope_type \"yarn\" requires it")
	}
	var err error
	if r.Factor, err = o.number("factor", 0); err != nil {
		return err
	}
	if r.Factor < 1 {
		return o.errf("factor", o.m["factor"], "must be ≥ 1 for yarn")
	}
	if r.OriginalContext, err = o.integer("original_max_position_embeddings", 0); err != nil {
		return err
	}
	if r.OriginalContext == 0 {
		r.OriginalContext = maxPos
	} else if r.OriginalContext < 1 {
		return o.errf("original_max_position_embeddings", o.m["original_max_position_embeddings"], "must be ≥ 1")
	} else if ratio := float64(maxPos) / float64(r.OriginalContext); math.Abs(ratio-r.Factor) > 1e-9*r.Factor {
		return o.errf("original_max_position_embeddings", o.m["original_max_position_embeddings"],
			"max_position_embeddings/original_max_position_embeddings = %v but factor = %v; transformers versions disagree on which to use, make them equal", ratio, r.Factor)
	}
	if r.AttentionFactor, err = o.number("attention_factor", 0); err != nil {
		return err
	}
	if r.AttentionFactor < 0 {
		return o.errf("attention_factor", o.m["attention_factor"], "must be > 0")
	}
	if r.AttentionFactor == 0 {
		r.AttentionFactor = 1
		if r.Factor > 1 {
			r.AttentionFactor = 0.1*math.Log(r.Factor) + 1
		}
	}
	if r.BetaFast, err = o.number("beta_fast", 0); err != nil {
		return err
	}
	if r.BetaFast == 0 {
		r.BetaFast = 32
	}
	if r.BetaSlow, err = o.number("beta_slow", 0); err != nil {
		return err
	}
	if r.BetaSlow == 0 {
		r.BetaSlow = 1
	}
	if r.BetaFast < 0 || r.BetaSlow < 0 || r.BetaFast < r.BetaSlow {
		return o.errf("beta_fast", o.m["beta_fast"], "want beta_fast ≥ beta_slow > 0 (got %v, %v)", r.BetaFast, r.BetaSlow)
	}
	if t, err := o.boolean("truncate", true); err != nil {
		return err
	} else if !t {
		return o.errf("truncate", false, "only the default (true: integer correction range) is supported")
	}
	for _, k := range []string{"mscale", "mscale_all_dim"} {
		if o.present(k) {
			return o.errf(k, o.m[k], "DeepSeek-style yarn mscale is not supported")
		}
	}
	return nil
}
