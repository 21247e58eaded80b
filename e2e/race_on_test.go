//go:build race

package e2e

// raceEnabled: the race detector slows the embedded engine about tenfold
// in this process (not in the server processes, built without it).
const raceEnabled = true
