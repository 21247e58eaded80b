package splitfast

import (
	"errors"
	"strings"
	"testing"

	"github.com/dlclark/regexp2/v2"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// pathological are the inputs that make backtracking engines slow or
// overflow their stacks (tiktoken issues #15 and #245), as functions of a
// divisor of their length.
var pathological = []struct {
	name string
	make func(div int) string
}{
	{"200k spaces", func(d int) string { return strings.Repeat(" ", 200_000/d) }},
	{"200k newlines", func(d int) string { return strings.Repeat("\n", 200_000/d) }},
	{"200k carets", func(d int) string { return strings.Repeat("^", 200_000/d) }},
	{"200k digits", func(d int) string { return strings.Repeat("7", 200_000/d) }},
	{"100k letters", func(d int) string { return strings.Repeat("a", 100_000/d) }},
	{"50k space-tab pairs then y", func(d int) string { return strings.Repeat(" \t", 50_000/d) + "y" }},
	{"100k space-newline pairs then y", func(d int) string { return strings.Repeat(" \n", 100_000/d) + "y" }},
	{"100k no-break spaces then x", func(d int) string { return strings.Repeat("\u00a0", 100_000/d) + "x" }},
	{"100k apostrophes", func(d int) string { return strings.Repeat("'", 100_000/d) }},
	{"50k CJK", func(d int) string { return strings.Repeat("你", 50_000/d) }},
}

// TestPathological checks the long inputs against regexp2. A Matcher's
// cost is linear by construction (see the package comment), so the test
// checks results only, never time. Under -race or -short, where regexp2
// is ten times slower, it compares inputs a tenth as long; the Matchers
// still split the full ones.
func TestPathological(t *testing.T) {
	t.Parallel()
	div := 1
	if raceEnabled || testing.Short() {
		div = 10
	}
	for _, tc := range pathological {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			full, s := tc.make(1), tc.make(div)
			for _, k := range knownPatterns {
				require.True(t, tiles(k.match(nil, full), len(full)), k.name)
				got := k.match(nil, s)
				idx, err := k.exact.FindAllStringIndex(s, -1)
				if errors.Is(err, regexp2.ErrBacktrackingStackLimit) {
					t.Logf("%s: regexp2 gives up: %v", k.name, err)
					continue
				}
				require.NoError(t, err)
				want := make([][2]int, len(idx))
				for i, p := range idx {
					want[i] = [2]int{p[0], p[1]}
				}
				assert.Empty(t, diff(s, got, want), "%s: %d matches, regexp2 %d", k.name, len(got), len(want))
			}
		})
	}
}
