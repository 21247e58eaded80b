package ui

import (
	"testing"

	"go.uber.org/goleak"
)

// Every goroutine a test starts (servers, event streams, samplers and
// their schedulers) has ended when the package's tests are done.
func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }
