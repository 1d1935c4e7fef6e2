//go:build !linux

package sweep

import (
	"os/exec"
	"syscall"
)

// isolate puts a worker in a process group of its own, so that the terminal's Ctrl-C reaches
// only `dptrain sweep run`, which then sends each cell one SIGTERM. Outside Linux a worker does
// not die with its parent: stop the workers of a killed `dptrain sweep run` yourself; the cell
// lock keeps a second run from training the same cell meanwhile.
func isolate(cmd *exec.Cmd) {
	if cmd.SysProcAttr == nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{}
	}
	cmd.SysProcAttr.Setpgid = true
}
