//go:build race

package splitfast

const raceEnabled = true
