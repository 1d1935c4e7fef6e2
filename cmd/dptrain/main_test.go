package main

import (
	"os"
	"testing"
)

// asMainEnv makes the test binary behave as dptrain itself (for tests whose jobs call dptrain
// from another process, such as the Slurm job array).
const asMainEnv = "DPTRAIN_TEST_AS_MAIN"

func TestMain(m *testing.M) {
	if os.Getenv(asMainEnv) == "1" {
		main()
		os.Exit(0)
	}
	os.Exit(m.Run())
}
