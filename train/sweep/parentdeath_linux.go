package sweep

import (
	"os/exec"
	"syscall"
)

// dieWithParent makes the kernel kill a worker when the process that started it dies, even by
// SIGKILL, so that `dptrain sweep run` killed with -9 leaves no cell running behind it.
func dieWithParent(cmd *exec.Cmd) {
	if cmd.SysProcAttr == nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{}
	}
	cmd.SysProcAttr.Pdeathsig = syscall.SIGKILL
}
