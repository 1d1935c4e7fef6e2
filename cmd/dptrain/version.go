package main

import (
	"fmt"
	"runtime"
	"runtime/debug"

	"github.com/dptrain/dptrain/internal/mpi"
	"github.com/dptrain/dptrain/models"
	"github.com/spf13/cobra"
)

// version is set at build time with -ldflags "-X main.version=...".
var version = "dev"

func newVersionCmd(a *app) *cobra.Command {
	return &cobra.Command{
		Use:   "version",
		Short: "Print the version, the Go toolchain, the BLAS implementation in use, whether MPI is built in and which oneDNN (engine dnnl)",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			rev := ""
			if bi, ok := debug.ReadBuildInfo(); ok {
				for _, s := range bi.Settings {
					if s.Key == "vcs.revision" {
						rev = " " + s.Value
					}
				}
			}
			dnnl := models.DNNL()
			if dnnl == "" {
				dnnl = "none"
			}
			fmt.Fprintf(a.out, "dptrain %s%s (%s, %s/%s, blas=%s, kernel=%s, mpi=%v, dnnl=%s)\n", version, rev,
				runtime.Version(), runtime.GOOS, runtime.GOARCH, models.BLAS(), models.BLASKernel(), mpi.Built, dnnl)
			if adv := models.BLASAdvice(); adv != "" {
				fmt.Fprintf(a.out, "note: %s\n", adv)
			}
			return nil
		},
	}
}
