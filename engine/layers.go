package engine

import (
	"math"

	"github.com/tandemrl/tandem/engine/kernels"
)

// linear is a view of one linear layer: its frozen base weight (out×in),
// an optional bias, an optional LoRA pair with its scale, and optional
// gradient buffers. A nil gw means the base weight is frozen (gw, like gb,
// is set only in full-parameter training); a nil glp means the adapter gets
// no gradient.
type linear[T Float] struct {
	w       frozen[T]
	bias    []T // out, or nil
	out, in int
	lp      *LoraPair[T]
	scale   T
	gw, gb  []T
	glp     *LoraPair[T]
}

// apply computes y = x·Wᵀ + bias + scale·(x·Aᵀ)·Bᵀ for n rows of x (n×in)
// into y (n×out). With an adapter, *u receives x·Aᵀ (n×rank) for the
// backward pass.
func (l linear[T]) apply(p par, n int, x, y []T, u *[]T) {
	l.w.mulT(p, n, x, 0, y)
	if l.bias != nil {
		for i := 0; i < n; i++ {
			yi := y[i*l.out : (i+1)*l.out]
			for j, b := range l.bias {
				yi[j] += b
			}
		}
	}
	if l.lp == nil {
		return
	}
	r := l.lp.Rank
	*u = grow(*u, n*r, false)
	gemm(p, false, true, n, r, l.in, 1, x, l.in, l.lp.A, l.in, 0, *u, r)
	gemm(p, false, true, n, l.out, r, l.scale, *u, r, l.lp.B, r, 1, y, l.out)
}

// backward takes dy (n×out) and the forward input x (n×in) and adapter
// intermediate u; it accumulates weight (and bias) gradients and, when dx
// is not nil, writes (beta 0) or adds (beta 1) the input gradient dx
// (n×in). tmp is scratch for dy·B.
func (l linear[T]) backward(p par, n int, dy, x, u, dx []T, beta T, tmp *[]T) {
	if dx != nil {
		l.w.mul(p, n, dy, beta, dx)
	}
	if l.gw != nil {
		gemm(p, true, false, l.out, l.in, n, 1, dy, l.out, x, l.in, 1, l.gw, l.in)
	}
	if l.gb != nil {
		for i := 0; i < n; i++ {
			axpy(1, dy[i*l.out:(i+1)*l.out], l.gb)
		}
	}
	if l.lp == nil {
		return
	}
	r := l.lp.Rank
	*tmp = grow(*tmp, n*r, false)
	t := *tmp
	gemm(p, false, false, n, r, l.out, 1, dy, l.out, l.lp.B, r, 0, t, r) // dy·B
	if dx != nil {
		gemm(p, false, false, n, l.in, r, l.scale, t, r, l.lp.A, l.in, 1, dx, l.in)
	}
	if l.glp != nil {
		gemm(p, true, false, l.out, r, n, l.scale, dy, l.out, u, r, 1, l.glp.B, r) // gB += s·dyᵀ·u
		gemm(p, true, false, r, l.in, n, l.scale, t, r, x, l.in, 1, l.glp.A, l.in) // gA += s·(dy·B)ᵀ·x
	}
}

// rmsnorm writes y = x·w/√(mean(x²)+eps) for n rows of width d and stores
// the inverse root mean square of each row in rs.
func rmsnorm[T Float](n, d int, x, w, y, rs []T, eps float64) {
	for i := 0; i < n; i++ {
		xi, yi := x[i*d:(i+1)*d], y[i*d:(i+1)*d]
		var ss float64
		for _, v := range xi {
			ss += float64(v) * float64(v)
		}
		r := T(1 / math.Sqrt(ss/float64(d)+eps))
		rs[i] = r
		for j, v := range xi {
			yi[j] = v * r * w[j]
		}
	}
}

// rmsnormBack adds the input gradient of rmsnorm to dx and, when gw is not
// nil, the weight gradient to gw.
func rmsnormBack[T Float](n, d int, dy, x, w, rs, dx, gw []T) {
	for i := 0; i < n; i++ {
		dyi, xi, dxi := dy[i*d:(i+1)*d], x[i*d:(i+1)*d], dx[i*d:(i+1)*d]
		r := rs[i]
		var m float64
		for j := range xi {
			m += float64(dyi[j]*w[j]) * float64(xi[j]*r)
		}
		mt := T(m / float64(d))
		for j := range xi {
			xh := xi[j] * r
			dxi[j] += r * (dyi[j]*w[j] - xh*mt)
		}
		if gw != nil {
			for j := range xi {
				gw[j] += dyi[j] * xi[j] * r
			}
		}
	}
}

func sigmoid(x float64) float64 { return 1 / (1 + math.Exp(-x)) }

// swiglu writes h = SiLU(g)·u elementwise and keeps σ(g) in sg for the
// backward pass (sg may be nil when no backward follows).
func swiglu[T Float](p par, g, u, h, sg []T) {
	p.forEach(len(h), 4096, func(lo, hi int) {
		if g32, ok := any(g).([]float32); ok {
			var sg32 []float32
			if sg != nil {
				sg32 = any(sg).([]float32)[lo:hi]
			}
			kernels.SwiGLU(g32[lo:hi], any(u).([]float32)[lo:hi], any(h).([]float32)[lo:hi], sg32)
			return
		}
		for i := lo; i < hi; i++ {
			gv := float64(g[i])
			s := sigmoid(gv)
			if sg != nil {
				sg[i] = T(s)
			}
			h[i] = T(gv*s) * u[i]
		}
	})
}

// swigluBack turns dh into dg and du (both overwritten), with sg = σ(g).
func swigluBack[T Float](p par, g, u, sg, dh, dg, du []T) {
	p.forEach(len(dh), 4096, func(lo, hi int) {
		for i := lo; i < hi; i++ {
			gv, s := g[i], sg[i]
			du[i] = dh[i] * gv * s
			dg[i] = dh[i] * u[i] * s * (1 + gv*(1-s))
		}
	})
}
