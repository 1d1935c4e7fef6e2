package train

import (
	"github.com/dptrain/dptrain/accounting"
	"github.com/dptrain/dptrain/accounting/modes"
)

func newAccountant(name string, run accounting.Run) (accounting.Accountant, error) {
	return modes.New(name, run)
}
