package rl

import (
	"encoding/json"
	"fmt"
)

type tensorWire struct {
	Data  json.RawMessage `json:"data"`
	DType DType           `json:"dtype"`
	Shape []int           `json:"shape,omitempty"`
}

// MarshalJSON writes the Tinker form {"data": [...], "dtype": ..., "shape": [...]}.
func (t TensorData) MarshalJSON() ([]byte, error) {
	var data []byte
	var err error
	switch t.DType {
	case Int64:
		data, err = json.Marshal(orEmpty(t.Ints))
	case Float32:
		data, err = json.Marshal(orEmpty(t.Floats))
	default:
		return nil, fmt.Errorf("tensor: dtype %q unknown; want int64 or float32", t.DType)
	}
	if err != nil {
		return nil, err
	}
	return json.Marshal(tensorWire{Data: data, DType: t.DType, Shape: t.Shape})
}

// UnmarshalJSON reads the Tinker form. A missing dtype is inferred as the
// Tinker SDK does: float32 if any element has a fraction or exponent, else
// int64.
func (t *TensorData) UnmarshalJSON(b []byte) error {
	var w tensorWire
	if err := json.Unmarshal(b, &w); err != nil {
		return fmt.Errorf("tensor: %w", err)
	}
	if len(w.Data) == 0 || string(w.Data) == "null" {
		return fmt.Errorf("tensor: field data is missing")
	}
	*t = TensorData{DType: w.DType, Shape: w.Shape}
	if t.DType == "" {
		var nums []json.Number
		if err := json.Unmarshal(w.Data, &nums); err != nil {
			return fmt.Errorf("tensor: data must be a list of numbers: %w", err)
		}
		t.DType = Int64
		for _, n := range nums {
			if _, err := n.Int64(); err != nil {
				t.DType = Float32
				break
			}
		}
	}
	switch t.DType {
	case Int64:
		if err := json.Unmarshal(w.Data, &t.Ints); err != nil {
			return fmt.Errorf("tensor: int64 data must be a list of integers: %w", err)
		}
	case Float32:
		if err := json.Unmarshal(w.Data, &t.Floats); err != nil {
			return fmt.Errorf("tensor: float32 data must be a list of numbers: %w", err)
		}
	default:
		return fmt.Errorf("tensor: dtype %q unknown; want int64 or float32", t.DType)
	}
	return nil
}

func orEmpty[T any](s []T) []T {
	if s == nil {
		return []T{}
	}
	return s
}
