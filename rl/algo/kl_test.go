package algo

import (
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// tinkerKL is tinker-cookbook's incorporate_kl_penalty written out over
// whole datums with a 0/1 mask: diff = (μ − base)·mask, avg over the mask,
// kl_adv = β·mask·(avg − diff), discounted over every position when γ > 0.
func tinkerKL(mu, base, mask [][]float64, beta, gamma float64) (klAdv [][]float64, avg float64) {
	var sum, n float64
	for i := range mu {
		for k := range mu[i] {
			sum += (mu[i][k] - base[i][k]) * mask[i][k]
			n += mask[i][k]
		}
	}
	avg = sum / n
	for i := range mu {
		row := make([]float64, len(mu[i]))
		for k := range row {
			row[k] = beta * mask[i][k] * (avg - (mu[i][k]-base[i][k])*mask[i][k])
		}
		if gamma > 0 {
			for k := range row {
				s, f := 0.0, 1.0
				for j := k; j < len(row); j++ {
					s += f * row[j]
					f *= gamma
				}
				row[k] = s
			}
		}
		klAdv = append(klAdv, row)
	}
	return klAdv, avg
}

func TestKLShapeMatchesTinker(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(7, 8))
	for range 200 {
		groups := randomGroups(rng)
		g, err := New(Config{KeepUniform: true}, nil)
		require.NoError(t, err)
		units, err := g.units(groups, map[string]float64{})
		require.NoError(t, err)
		if len(units) == 0 {
			continue
		}
		var mu, base, mask, adv0 [][]float64
		for _, u := range units {
			b := make([]float64, len(u.mu))
			m := make([]float64, len(u.mu))
			for k := range b {
				b[k] = -rng.Float64() * 4
				if k >= u.start && k < u.end {
					m[k] = 1
				}
			}
			mu, base, mask = append(mu, u.mu), append(base, b), append(mask, m)
			adv0 = append(adv0, append([]float64(nil), u.adv...))
		}
		beta := rng.Float64()
		gamma := 0.0
		if rng.IntN(2) == 0 {
			gamma = rng.Float64()
		}
		want, avg := tinkerKL(mu, base, mask, beta, gamma)
		v1, v2, err := klShape(units, base, beta, gamma)
		require.NoError(t, err)
		assert.InDelta(t, avg, v1, 1e-12)
		var sq, n float64
		for i, u := range units {
			for k := range u.adv {
				if mask[i][k] == 0 {
					// tinker-cookbook's discounted sum leaks into the
					// prompt positions before the action; tandem keeps
					// non-action advantages at zero.
					assert.Equal(t, adv0[i][k], u.adv[k], "datum %d position %d is not an action", i, k)
					continue
				}
				d := mu[i][k] - base[i][k]
				sq += d * d
				n++
				assert.InDelta(t, adv0[i][k]+want[i][k], u.adv[k], 1e-9, "datum %d position %d", i, k)
			}
		}
		assert.InDelta(t, 0.5*sq/n, v2, 1e-12)
	}
}

func TestKLShapeErrors(t *testing.T) {
	t.Parallel()
	u := unit{mu: []float64{-1, -2}, adv: []float64{0, 1}, start: 1, end: 2}
	_, _, err := klShape([]unit{u}, nil, 0.1, 0)
	require.ErrorContains(t, err, "scored 0 datums; want 1")
	_, _, err = klShape([]unit{u}, [][]float64{{-1}}, 0.1, 0)
	require.ErrorContains(t, err, "1 log-probs for datum 0 of 2 positions")
}
