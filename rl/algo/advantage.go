package algo

import "math"

// stdEps keeps the division by a group's standard deviation finite.
const stdEps = 1e-6

// GroupAdvantages returns the advantage of each return in a group: the
// return minus the group's mean, divided by the group's population standard
// deviation plus 1e-6 when normalizeStd is set. uniform reports whether every
// return is equal (then every advantage is 0). The result is appended to
// dst[:0]; returns is not modified.
func GroupAdvantages(dst, returns []float64, normalizeStd bool) (adv []float64, uniform bool) {
	return appendAdvantages(dst[:0], returns, normalizeStd)
}

// appendAdvantages is GroupAdvantages appending to dst.
func appendAdvantages(dst, returns []float64, normalizeStd bool) (adv []float64, uniform bool) {
	if len(returns) == 0 {
		return dst, true
	}
	uniform = true
	var mean float64
	for _, r := range returns {
		mean += r
		uniform = uniform && r == returns[0]
	}
	if uniform {
		for range returns {
			dst = append(dst, 0)
		}
		return dst, true
	}
	mean /= float64(len(returns))
	var vari float64
	for _, r := range returns {
		vari += (r - mean) * (r - mean)
	}
	std := math.Sqrt(vari / float64(len(returns)))
	for _, r := range returns {
		a := r - mean
		if normalizeStd {
			a /= std + stdEps
		}
		dst = append(dst, a)
	}
	return dst, false
}
