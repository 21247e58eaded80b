//go:build !linux

package engine

import "time"

// processCPU is unavailable here; benchmarks then report wall-clock figures
// only.
func processCPU() time.Duration { return 0 }
