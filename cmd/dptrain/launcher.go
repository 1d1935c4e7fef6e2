package main

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
)

// launch describes how this process was started, for the commands dptrain prints to continue
// a run: the words up to and including the program (bin/dptrain alone, or
// "mpirun -np 2 ... bin/dptrain"), and a note when the launcher's own options are not known.
type launch struct {
	prefix string
	note   string
}

// processInfo is what launchOf reads about this process: its own arguments, its parent's
// (nil when they cannot be read) and its environment.
type processInfo struct {
	args, parentArgs []string
	getenv           func(string) string
}

// thisProcess reads processInfo from the running process (the parent's arguments from /proc).
func thisProcess() processInfo {
	p := processInfo{args: os.Args, getenv: os.Getenv}
	if b, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(os.Getppid()), "cmdline")); err == nil && len(b) > 0 {
		p.parentArgs = strings.Split(strings.TrimSuffix(string(b), "\x00"), "\x00")
	}
	return p
}

// launchers are the programs that start a data-parallel job's ranks as their children.
var launchers = map[string]bool{"mpirun": true, "mpiexec": true, "orterun": true, "prterun": true}

// launchOf returns how a rank of a group of size ranks was started, prog being the program as
// it was started. A rank that mpirun started on its own node (rank 0, as mpirun places ranks
// by default) is mpirun's child, and mpirun's command line holds the job's options: the prefix
// is that command line up to the program. Otherwise (a rank on another node, under an
// orted; srun) the launcher's options are not known, and the prefix names the launcher and the
// rank count with a note to give the options of the stopped job again.
func launchOf(p processInfo, prog string, size int) launch {
	if size <= 1 {
		return launch{prefix: prog}
	}
	if len(p.parentArgs) > 0 && launchers[filepath.Base(p.parentArgs[0])] {
		// mpirun's arguments end with the program and its own arguments, as this process got them.
		for i := len(p.parentArgs) - len(p.args); i > 0; i-- {
			if slices.Equal(p.parentArgs[i:i+len(p.args)], p.args) {
				words := make([]string, 0, i)
				for _, w := range p.parentArgs[:i] {
					words = append(words, shellWord(w))
				}
				return launch{prefix: strings.Join(append(words, prog), " ")}
			}
		}
	}
	n := strconv.Itoa(size)
	if p.getenv("SLURM_STEP_ID") != "" && p.getenv("OMPI_COMM_WORLD_SIZE") == "" {
		return launch{prefix: "srun -n " + n + " " + prog, note: "with srun's other options as in the stopped job"}
	}
	return launch{prefix: "mpirun -np " + n + " " + prog, note: "with mpirun's other options as in the stopped job"}
}

// shellWord quotes w for a POSIX shell where it needs quoting.
func shellWord(w string) string {
	if w != "" && strings.Trim(w, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_=+.,/:@%") == "" {
		return w
	}
	return "'" + strings.ReplaceAll(w, "'", `'\''`) + "'"
}

// resumeCommand is the command that continues the run whose saved config is config, started as
// l says, with its note.
func (l launch) resumeCommand(config string) string {
	c := fmt.Sprintf("%s train --config %s --resume", l.prefix, shellWord(config))
	if l.note != "" {
		c += "   (" + l.note + ")"
	}
	return c
}
