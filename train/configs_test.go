package train

import (
	"path/filepath"
	"testing"
)

// Every shipped config must parse and validate.
func TestShippedConfigs(t *testing.T) {
	files, err := filepath.Glob("../configs/*.yaml")
	if err != nil || len(files) == 0 {
		t.Fatalf("no configs found: %v", err)
	}
	for _, f := range files {
		if _, err := LoadConfig(f, nil); err != nil {
			t.Errorf("%s: %v", f, err)
		}
	}
}
