package wire

import (
	"math"

	"github.com/tandemrl/tandem/rl"
)

// Chunk types of a ModelInput as the SDK names them. Only encoded_text
// carries tokens tandem can use; image chunks are refused with a clear error.
const (
	ChunkEncodedText       = "encoded_text"
	chunkImage             = "image"
	chunkImageAssetPointer = "image_asset_pointer"
)

// decodeModelInput reads {"chunks":[{"tokens":[...], "type":"encoded_text"}]}.
// A chunk without "type" is encoded_text (the SDK leaves the default out).
func decodeModelInput(o obj) (rl.ModelInput, error) {
	chunks, _, err := o.list("chunks", true)
	if err != nil {
		return rl.ModelInput{}, err
	}
	mi := rl.ModelInput{Chunks: make([]rl.Chunk, 0, len(chunks))}
	for i, v := range chunks {
		c, err := asObject(index(o.at("chunks"), i), v)
		if err != nil {
			return rl.ModelInput{}, err
		}
		typ, err := c.str("type", false)
		if err != nil {
			return rl.ModelInput{}, err
		}
		switch typ {
		case "", ChunkEncodedText:
		case chunkImage, chunkImageAssetPointer:
			return rl.ModelInput{}, fieldErr(c.at("type"), "%q chunks are not supported; want %q", typ, ChunkEncodedText)
		default:
			return rl.ModelInput{}, fieldErr(c.at("type"), "got %q, want %q", typ, ChunkEncodedText)
		}
		l, _, err := c.numbers("tokens", true)
		if err != nil {
			return rl.ModelInput{}, err
		}
		raw, err := ints(c.at("tokens"), l)
		if err != nil {
			return rl.ModelInput{}, err
		}
		toks := make([]int, len(raw))
		for j, t := range raw {
			if t < 0 || t > math.MaxInt32 { // the path is built only for the error
				_, err := tokenID(index(c.at("tokens"), j), t)
				return rl.ModelInput{}, err
			}
			toks[j] = int(t)
		}
		mi.Chunks = append(mi.Chunks, rl.Chunk{Type: rl.ChunkEncodedText, Tokens: toks})
	}
	return mi, nil
}

// keyDType is the dtype the SDK gives a loss input passed as a bare list
// (types/datum.py, _key_to_type).
var keyDType = map[string]rl.DType{
	rl.InputTargetTokens: rl.Int64,
	rl.InputWeights:      rl.Float32,
	rl.InputAdvantages:   rl.Float32,
	rl.InputLogprobs:     rl.Float32,
	rl.ClipLowThreshold:  rl.Float32,
	rl.ClipHighThreshold: rl.Float32,
}

// decodeTensor reads {"data":[...], "dtype":"int64"|"float32", "shape":[...]}.
// A bare list is accepted for the input names the SDK converts (key gives the dtype).
func decodeTensor(path, key string, v any) (rl.TensorData, error) {
	switch v.(type) {
	case []any, numList:
		dt, known := keyDType[key]
		if !known {
			return rl.TensorData{}, fieldErr(path, "got a bare list; want an object {data, dtype, shape}")
		}
		l, err := asNumbers(path, v)
		if err != nil {
			return rl.TensorData{}, err
		}
		return tensorOf(path, path, dt, l, nil)
	}
	o, err := asObject(path, v)
	if err != nil {
		return rl.TensorData{}, err
	}
	dt, err := o.str("dtype", true)
	if err != nil {
		return rl.TensorData{}, err
	}
	if dt != string(rl.Int64) && dt != string(rl.Float32) {
		return rl.TensorData{}, fieldErr(o.at("dtype"), "got %q, want \"int64\" or \"float32\"", dt)
	}
	data, _, err := o.numbers("data", true)
	if err != nil {
		return rl.TensorData{}, err
	}
	var shape []int
	if l, found, err := o.numbers("shape", false); err != nil {
		return rl.TensorData{}, err
	} else if found {
		raw, err := ints(o.at("shape"), l)
		if err != nil {
			return rl.TensorData{}, err
		}
		shape = make([]int, len(raw))
		for i, d := range raw {
			if d < 0 || d > 1<<31 {
				return rl.TensorData{}, fieldErr(index(o.at("shape"), i), "dimension %d out of range", d)
			}
			shape[i] = int(d)
		}
	}
	return tensorOf(path, o.at("data"), rl.DType(dt), data, shape)
}

func tensorOf(path, dataPath string, dt rl.DType, data numList, shape []int) (rl.TensorData, error) {
	t := rl.TensorData{DType: dt, Shape: shape}
	var err error
	if dt == rl.Int64 {
		t.Ints, err = ints(dataPath, data)
	} else {
		t.Floats, err = floats(dataPath, data)
	}
	if err != nil {
		return rl.TensorData{}, err
	}
	if t.Shape == nil {
		t.Shape = []int{t.Len()}
	}
	if err := t.Validate(); err != nil {
		return rl.TensorData{}, fieldErr(path, "%v", err)
	}
	return t, nil
}

// decodeDatum reads {"model_input": ModelInput, "loss_fn_inputs": {name: TensorData}}.
// Every loss input must hold one element per model_input token.
func decodeDatum(o obj) (rl.Datum, error) {
	mo, _, err := o.object("model_input", true)
	if err != nil {
		return rl.Datum{}, err
	}
	mi, err := decodeModelInput(mo)
	if err != nil {
		return rl.Datum{}, err
	}
	lo, _, err := o.object("loss_fn_inputs", true)
	if err != nil {
		return rl.Datum{}, err
	}
	d := rl.Datum{ModelInput: mi, LossFnInputs: make(map[string]rl.TensorData, len(lo.m))}
	n := mi.Len()
	for k, v := range lo.m {
		if v == nil {
			continue
		}
		t, err := decodeTensor(lo.at(k), k, v)
		if err != nil {
			return rl.Datum{}, err
		}
		if t.Len() != n {
			return rl.Datum{}, fieldErr(lo.at(k), "%d elements, want %d (one per model_input token)", t.Len(), n)
		}
		if k == rl.InputTargetTokens {
			if t.DType != rl.Int64 {
				return rl.Datum{}, fieldErr(lo.at(k), "dtype %q, want \"int64\" token ids", t.DType)
			}
			for i, x := range t.Ints {
				if x < 0 || x > math.MaxInt32 {
					_, err := tokenID(index(lo.at(k)+".data", i), x)
					return rl.Datum{}, err
				}
			}
		}
		d.LossFnInputs[k] = t
	}
	return d, nil
}

// requiredInputs lists the loss inputs each built-in loss reads.
var requiredInputs = map[rl.LossName][]string{
	rl.CrossEntropy:       {rl.InputTargetTokens},
	rl.ImportanceSampling: {rl.InputTargetTokens, rl.InputLogprobs, rl.InputAdvantages},
	rl.PPO:                {rl.InputTargetTokens, rl.InputLogprobs, rl.InputAdvantages},
	rl.CISPO:              {rl.InputTargetTokens, rl.InputLogprobs, rl.InputAdvantages},
	rl.DRO:                {rl.InputTargetTokens, rl.InputLogprobs, rl.InputAdvantages},
}

// LossNames lists the loss_fn values a server accepts.
var LossNames = []rl.LossName{rl.CrossEntropy, rl.ImportanceSampling, rl.PPO, rl.CISPO, rl.DRO}

// decodeForwardBackwardInput reads {data:[Datum], loss_fn, loss_fn_config}.
func decodeForwardBackwardInput(o obj) (ForwardBackwardInput, error) {
	name, err := o.str("loss_fn", true)
	if err != nil {
		return ForwardBackwardInput{}, err
	}
	need, ok := requiredInputs[rl.LossName(name)]
	if !ok {
		return ForwardBackwardInput{}, fieldErr(o.at("loss_fn"), "unknown loss %q; want one of %v", name, LossNames)
	}
	in := ForwardBackwardInput{Loss: rl.Loss{Name: rl.LossName(name)}}
	if co, found, err := o.object("loss_fn_config", false); err != nil {
		return ForwardBackwardInput{}, err
	} else if found {
		if in.Loss.Config, err = floatMap(co); err != nil {
			return ForwardBackwardInput{}, err
		}
	}
	data, _, err := o.list("data", true)
	if err != nil {
		return ForwardBackwardInput{}, err
	}
	in.Data = make([]rl.Datum, len(data))
	for i, v := range data {
		p := index(o.at("data"), i)
		do, err := asObject(p, v)
		if err != nil {
			return ForwardBackwardInput{}, err
		}
		if in.Data[i], err = decodeDatum(do); err != nil {
			return ForwardBackwardInput{}, err
		}
		for _, k := range need {
			if _, ok := in.Data[i].LossFnInputs[k]; !ok {
				return ForwardBackwardInput{}, fieldErr(p+".loss_fn_inputs", "missing %q, which loss %q needs (it needs %v)", k, name, need)
			}
		}
	}
	return in, nil
}
