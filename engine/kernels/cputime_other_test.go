//go:build !linux

package kernels

import "time"

// threadCPU is unavailable here; benchmarks then report wall-clock rates only.
func threadCPU() time.Duration { return 0 }

// processCPU is unavailable here.
func processCPU() time.Duration { return 0 }
