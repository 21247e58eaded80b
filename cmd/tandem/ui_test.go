package main

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestUIFlagChecks(t *testing.T) {
	t.Setenv(EnvAPIKey, "") // not parallel: the environment is shared
	tests := []struct {
		name    string
		f       uiFlags
		wantErr string
	}{
		{"loopback", uiFlags{listen: "127.0.0.1:8080"}, ""},
		{"localhost", uiFlags{listen: "localhost:0"}, ""},
		{"ipv6 loopback", uiFlags{listen: "[::1]:8080"}, ""},
		{"remote refused", uiFlags{listen: "0.0.0.0:8080", apiKey: "k"}, "allow-remote"},
		{"remote without key", uiFlags{listen: "0.0.0.0:8080", allowRemote: true}, "api-key"},
		{"remote with key", uiFlags{listen: "0.0.0.0:8080", allowRemote: true, apiKey: "k"}, ""},
		{"no port", uiFlags{listen: "127.0.0.1"}, "host:port"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := checkUIFlags(&tt.f)
			if tt.wantErr == "" {
				assert.NoError(t, err)
				return
			}
			assert.ErrorContains(t, err, tt.wantErr)
			var u usageError
			assert.ErrorAs(t, err, &u)
		})
	}
}

func TestUICommandRefusesRemote(t *testing.T) {
	t.Setenv(EnvAPIKey, "")
	err := run(t.Context(), []string{"ui", "-listen", "0.0.0.0:0", "-runs", t.TempDir()}, nil, nil)
	assert.ErrorContains(t, err, "allow-remote")
	assert.Equal(t, 2, exitCode(err))
	err = run(t.Context(), []string{"ui", "-runs", t.TempDir() + "/missing", "-listen", "127.0.0.1:0"}, nil, nil)
	assert.ErrorContains(t, err, "not a folder")
}
