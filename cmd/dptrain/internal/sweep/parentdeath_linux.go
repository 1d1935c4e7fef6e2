package sweep

import (
	"os/exec"
	"syscall"
)

// isolate puts a worker in a process group of its own, so that the terminal's Ctrl-C reaches
// only `dptrain sweep run`, which then sends each cell one SIGTERM (a cell given SIGINT and
// then SIGTERM would take the second signal as "stop now" and lose its checkpoint); and it
// makes the kernel kill the worker when the process that started it dies, even by SIGKILL, so
// that `dptrain sweep run` killed with -9 leaves no cell running behind it.
func isolate(cmd *exec.Cmd) {
	if cmd.SysProcAttr == nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{}
	}
	cmd.SysProcAttr.Setpgid = true
	cmd.SysProcAttr.Pdeathsig = syscall.SIGKILL
}
