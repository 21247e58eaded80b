package wire

import (
	"encoding/binary"
	"encoding/json"
	"math"

	"google.golang.org/protobuf/encoding/protowire"

	"github.com/tandemrl/tandem/rl"
)

// Top-k prompt log-probs (SampleRequest.topk_prompt_logprobs): in JSON a
// list with, per prompt position, null or a list of (token_id, logprob)
// pairs ([id, lp]); in protobuf a TopkPromptLogprobs message of two dense
// prompt_length × k matrices (token_ids int32, logprobs float32) whose
// missing cells hold token 0 and MaskLogprob, a row of them a null
// position (the SDK's types/sample_response.py _topk_to_lists).

// MaskLogprob fills the cells of a top-k matrix that hold no token.
const MaskLogprob = -99999.0

var pbTopKFields = []string{1: "token_ids", 2: "logprobs", 3: "k", 4: "prompt_length"}

// TopKEntry is one (token_id, logprob) pair, written as [id, lp].
type TopKEntry struct {
	Token   int
	Logprob float64
}

// MarshalJSON writes the pair as the SDK's tuple.
func (e TopKEntry) MarshalJSON() ([]byte, error) {
	return json.Marshal([2]any{e.Token, e.Logprob})
}

// topKFromRL converts the rl rows; a nil row stays null.
func topKFromRL(rows [][]rl.TokenLogprob) [][]TopKEntry {
	out := make([][]TopKEntry, len(rows))
	for i, r := range rows {
		if r == nil {
			continue
		}
		out[i] = make([]TopKEntry, len(r))
		for j, e := range r {
			out[i][j] = TopKEntry{Token: e.Token, Logprob: e.Logprob}
		}
	}
	return out
}

// decodeTopKJSON reads the JSON form at path.
func decodeTopKJSON(path string, l []any) ([][]TopKEntry, error) {
	out := make([][]TopKEntry, len(l))
	for i, v := range l {
		if v == nil {
			continue
		}
		rp := index(path, i)
		var row []any
		switch r := v.(type) {
		case []any:
			row = r
		case numList:
			if len(r) > 0 {
				return nil, fieldErr(index(rp, 0), "got a number, want a [token_id, logprob] pair")
			}
		default:
			return nil, fieldErr(rp, "got %s, want null or a list of [token_id, logprob] pairs", kind(v))
		}
		out[i] = make([]TopKEntry, len(row))
		for j, pv := range row {
			pp := index(rp, j)
			pair, ok := pv.(numList) // a list of numbers is parsed as their literals
			if !ok || len(pair) != 2 {
				return nil, fieldErr(pp, "got %s, want a [token_id, logprob] pair", kind(pv))
			}
			t, err := litInt(index(pp, 0), pair[0])
			if err != nil {
				return nil, err
			}
			id, err := tokenID(index(pp, 0), t)
			if err != nil {
				return nil, err
			}
			lp, err := litFloat(index(pp, 1), pair[1])
			if err != nil {
				return nil, err
			}
			out[i][j] = TopKEntry{Token: id, Logprob: lp}
		}
	}
	return out, nil
}

// topKWidth is the k of the matrices: the longest row.
func topKWidth(rows [][]TopKEntry) int {
	k := 0
	for _, r := range rows {
		k = max(k, len(r))
	}
	return k
}

// sizeTopKProto is the size of the TopkPromptLogprobs message's body.
func sizeTopKProto(rows [][]TopKEntry) int {
	n, k := len(rows), topKWidth(rows)
	return sizeMessage(1, 4*n*k) + sizeMessage(2, 4*n*k) + sizeVarintField(3, uint64(k)) + sizeVarintField(4, uint64(n))
}

// appendTopKProto appends the TopkPromptLogprobs message body.
func appendTopKProto(dst []byte, path string, rows [][]TopKEntry) ([]byte, error) {
	n, k := len(rows), topKWidth(rows)
	dst = appendMessageHeader(dst, 1, 4*n*k)
	for i, r := range rows {
		for j := range k {
			id := 0
			if j < len(r) {
				id = r[j].Token
				if id < 0 || id > math.MaxInt32 {
					return dst, fieldErr(index(index(path, i), j), "token id %d outside int32", id)
				}
			}
			dst = binary.LittleEndian.AppendUint32(dst, uint32(int32(id)))
		}
	}
	dst = appendMessageHeader(dst, 2, 4*n*k)
	for _, r := range rows {
		for j := range k {
			lp := float32(MaskLogprob)
			if j < len(r) {
				lp = float32(r[j].Logprob)
			}
			dst = binary.LittleEndian.AppendUint32(dst, math.Float32bits(lp))
		}
	}
	dst = appendVarintField(dst, 3, uint64(k))
	return appendVarintField(dst, 4, uint64(n)), nil
}

// decodeTopKProto reads a TopkPromptLogprobs message at path.
func decodeTopKProto(path string, b []byte) ([][]TopKEntry, error) {
	var (
		ids, lps []byte
		k, n     uint64
	)
	m := pbMsg{path: path, names: pbTopKFields, b: b}
	for f, err := range m.fields() {
		if err != nil {
			return nil, err
		}
		switch f.num {
		case 1, 2:
			if err := m.want(f, protowire.BytesType); err != nil {
				return nil, err
			}
			if f.num == 1 {
				ids = f.b
			} else {
				lps = f.b
			}
		case 3, 4:
			if err := m.want(f, protowire.VarintType); err != nil {
				return nil, err
			}
			if f.num == 3 {
				k = uint64(uint32(f.v))
			} else {
				n = uint64(uint32(f.v))
			}
		}
	}
	cells := n * k
	if cells > uint64(len(b)) { // each cell takes 8 bytes of b: a bound before multiplying further
		return nil, fieldErr(join(path, "token_ids"), "%d × %d cells do not fit in %d bytes", n, k, len(b))
	}
	if uint64(len(ids)) != 4*cells || uint64(len(lps)) != 4*cells {
		return nil, fieldErr(join(path, "token_ids"), "%d and %d bytes; prompt_length %d × k %d wants %d each", len(ids), len(lps), n, k, 4*cells)
	}
	rows := make([][]TopKEntry, n)
	for i := range rows {
		row := make([]TopKEntry, 0, k)
		for j := range int(k) {
			c := 4 * (i*int(k) + j)
			id := int32(binary.LittleEndian.Uint32(ids[c:]))
			lp := float64(math.Float32frombits(binary.LittleEndian.Uint32(lps[c:])))
			if id == 0 && lp == MaskLogprob {
				continue
			}
			cp := index(index(join(path, "token_ids"), i), j)
			if id < 0 {
				return nil, fieldErr(cp, "token id %d is negative", id)
			}
			if math.IsNaN(lp) || math.IsInf(lp, 0) {
				return nil, fieldErr(index(index(join(path, "logprobs"), i), j), "%v; want a finite number", lp)
			}
			row = append(row, TopKEntry{Token: int(id), Logprob: lp})
		}
		if len(row) > 0 || k == 0 {
			rows[i] = row
		}
	}
	return rows, nil
}

// ToRL returns the rl form of rows.
func topKToRL(rows [][]TopKEntry) [][]rl.TokenLogprob {
	out := make([][]rl.TokenLogprob, len(rows))
	for i, r := range rows {
		if r == nil {
			continue
		}
		out[i] = make([]rl.TokenLogprob, len(r))
		for j, e := range r {
			out[i][j] = rl.TokenLogprob{Token: e.Token, Logprob: e.Logprob}
		}
	}
	return out
}
