package kernels

// goKernel4x4 is the portable micro-kernel: a 4×4 tile held in sixteen local
// accumulators. It is what runs on architectures without assembly kernels and
// when the assembly is disabled.
func goKernel4x4[T float](k int, a []T, rsa, csa int, b []T, ldb int, c []T, ldc int, alpha, beta T, _ []T) {
	var c00, c01, c02, c03, c10, c11, c12, c13, c20, c21, c22, c23, c30, c31, c32, c33 T
	_ = a[3*rsa+(k-1)*csa]
	_ = b[(k-1)*ldb+3]
	for p := range k {
		o := p * csa
		bp := b[p*ldb : p*ldb+4 : p*ldb+4]
		a0, a1, a2, a3 := a[o], a[o+rsa], a[o+2*rsa], a[o+3*rsa]
		b0, b1, b2, b3 := bp[0], bp[1], bp[2], bp[3]
		c00 += a0 * b0
		c01 += a0 * b1
		c02 += a0 * b2
		c03 += a0 * b3
		c10 += a1 * b0
		c11 += a1 * b1
		c12 += a1 * b2
		c13 += a1 * b3
		c20 += a2 * b0
		c21 += a2 * b1
		c22 += a2 * b2
		c23 += a2 * b3
		c30 += a3 * b0
		c31 += a3 * b1
		c32 += a3 * b2
		c33 += a3 * b3
	}
	storeRow4(c[0*ldc:0*ldc+4], c00, c01, c02, c03, alpha, beta)
	storeRow4(c[1*ldc:1*ldc+4], c10, c11, c12, c13, alpha, beta)
	storeRow4(c[2*ldc:2*ldc+4], c20, c21, c22, c23, alpha, beta)
	storeRow4(c[3*ldc:3*ldc+4], c30, c31, c32, c33, alpha, beta)
}

func storeRow4[T float](c []T, x0, x1, x2, x3, alpha, beta T) {
	c = c[:4]
	if beta == 0 {
		c[0], c[1], c[2], c[3] = alpha*x0, alpha*x1, alpha*x2, alpha*x3
		return
	}
	c[0] = alpha*x0 + beta*c[0]
	c[1] = alpha*x1 + beta*c[1]
	c[2] = alpha*x2 + beta*c[2]
	c[3] = alpha*x3 + beta*c[3]
}

// goDot is the portable dot product: four interleaved partial sums, combined
// as (s0+s1)+(s2+s3), then the tail in order.
func goDot[T float](x, y []T) T {
	n := len(x)
	y = y[:n]
	var s0, s1, s2, s3 T
	i := 0
	for ; i+4 <= n; i += 4 {
		s0 += x[i] * y[i]
		s1 += x[i+1] * y[i+1]
		s2 += x[i+2] * y[i+2]
		s3 += x[i+3] * y[i+3]
	}
	s := (s0 + s1) + (s2 + s3)
	for ; i < n; i++ {
		s += x[i] * y[i]
	}
	return s
}

// goAxpy is the portable y += alpha·x.
func goAxpy[T float](alpha T, x, y []T) {
	y = y[:len(x)]
	for i, v := range x {
		y[i] += alpha * v
	}
}
