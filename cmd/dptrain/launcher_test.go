package main

import "testing"

// The command that continues a run names the program as it was started: alone, under mpirun
// (mpirun's own command line, read from the parent), or under a launcher whose options are not
// known, with a note.
func TestLaunchOf(t *testing.T) {
	own := []string{"bin/dptrain", "train", "--config", "c.yaml"}
	env := func(kv ...string) func(string) string {
		return func(k string) string {
			for i := 0; i < len(kv); i += 2 {
				if kv[i] == k {
					return kv[i+1]
				}
			}
			return ""
		}
	}
	for _, test := range []struct {
		name   string
		parent []string
		env    func(string) string
		size   int
		want   string
	}{
		{"one process", []string{"bash"}, env(), 1, "bin/dptrain train --config 'my run/config.yaml' --resume"},
		{"mpirun", append([]string{"mpirun", "-np", "2", "--mca", "btl", "tcp,self", "-x", "A=b c"}, own...), env("OMPI_COMM_WORLD_SIZE", "2"), 2,
			"mpirun -np 2 --mca btl tcp,self -x 'A=b c' bin/dptrain train --config 'my run/config.yaml' --resume"},
		{"mpiexec by path", append([]string{"/usr/bin/mpiexec", "-n", "4"}, own...), env("OMPI_COMM_WORLD_SIZE", "4"), 4,
			"/usr/bin/mpiexec -n 4 bin/dptrain train --config 'my run/config.yaml' --resume"},
		{"orted", []string{"orted", "-mca", "ess", "env"}, env("OMPI_COMM_WORLD_SIZE", "3"), 3,
			"mpirun -np 3 bin/dptrain train --config 'my run/config.yaml' --resume   (with mpirun's other options as in the stopped job)"},
		{"srun", []string{"slurmstepd: [12.0]"}, env("SLURM_STEP_ID", "0", "SLURM_NTASKS", "2"), 2,
			"srun -n 2 bin/dptrain train --config 'my run/config.yaml' --resume   (with srun's other options as in the stopped job)"},
		{"parent unknown", nil, env("OMPI_COMM_WORLD_SIZE", "2"), 2,
			"mpirun -np 2 bin/dptrain train --config 'my run/config.yaml' --resume   (with mpirun's other options as in the stopped job)"},
	} {
		p := processInfo{args: own, parentArgs: test.parent, getenv: test.env}
		if got := launchOf(p, "bin/dptrain", test.size).resumeCommand("my run/config.yaml"); got != test.want {
			t.Errorf("%s:\n got %s\nwant %s", test.name, got, test.want)
		}
	}
}
