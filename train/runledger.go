package train

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"

	"github.com/dptrain/dptrain/ledger"
	"github.com/dptrain/dptrain/train/rundir"
)

// ledgerFix is what an operator can do about a damaged run ledger.
var ledgerFix = fmt.Sprintf("restore %s from a backup and resume again, or start a new run in another output.dir", filepath.Join(rundir.PrivateDir, rundir.LedgerFile))

// runLedgerError gives a ledger error the run directory's fix.
func runLedgerError(err error) error {
	var le *ledger.Error
	if errors.As(err, &le) && le.Fix == "" {
		le.Fix = ledgerFix
		if le.Damage == ledger.Unchained {
			le.Fix = "finish the run with the dptrain that wrote it, or start a new run in another output.dir"
		}
	}
	return err
}

// ledgerAnchors returns the records of the ledger (length and head) of every readable
// checkpoint of the run, the one resumed from (if any) first. A checkpoint that cannot be read
// is passed over with a warning; one written before the ledger was chained is passed over
// too, unless it is the one resumed from.
func (t *Trainer) ledgerAnchors() []ledger.Anchor {
	var anchors []ledger.Anchor
	var seen []os.FileInfo
	add := func(a ledger.Anchor) {
		if fi, err := os.Stat(a.From); err == nil {
			seen = append(seen, fi)
		}
		anchors = append(anchors, a)
	}
	if t.resumed != nil {
		add(*t.resumed)
	}
	dir := rundir.PrivatePath(t.cfg.Output.Dir)
	for _, path := range append(rundir.OlderCheckpoints(dir), filepath.Join(dir, rundir.CheckpointFile)) {
		fi, err := os.Stat(path)
		if err != nil || slices.ContainsFunc(seen, func(s os.FileInfo) bool { return os.SameFile(s, fi) }) {
			continue
		}
		c, err := rundir.LoadCheckpoint(path)
		if err != nil {
			t.log.Warnf("the privacy ledger is not checked against %s, which cannot be read: %v", path, err)
			continue
		}
		if c.Header.LedgerHead == "" {
			continue
		}
		add(ledger.Anchor{Lines: c.Header.LedgerLines, Head: c.Header.LedgerHead, From: path})
	}
	return anchors
}

// openLedger opens the run's ledger file and composes every step it holds into the live
// accountants, before the first step of this session. start is the step this session continues
// from (0 for a new run). The ledger must verify against every checkpoint of the run (a
// *LedgerError otherwise). Steps the ledger holds beyond start were executed on a branch the
// run abandoned (a resume from an older checkpoint, or a crash after the last one): they stay
// counted, the session starts a new branch, it says so in the log and in the summary, and the
// hidden-state accountants stop applying.
func (t *Trainer) openLedger(start int) error {
	if t.live == nil {
		return nil
	}
	path := rundir.PrivatePath(t.cfg.Output.Dir, rundir.LedgerFile)
	if t.resumed != nil && t.resumed.Head == "" {
		return &ledger.Error{Path: path, Damage: ledger.Unchained, Fix: "finish the run with the dptrain that wrote it, or start a new run in another output.dir", Checkpoint: t.resumed.From,
			Detail: fmt.Sprintf("checkpoint %s records no ledger head: it was written by a dptrain from before the ledger's lines were chained by hash", t.resumed.From)}
	}
	anchors := t.ledgerAnchors()
	l, err := ledger.Open(path, anchors, t.resumed == nil, t.log.Warnf)
	if err != nil {
		return runLedgerError(err)
	}
	if l.Top() < start {
		// The checkpoints' heads cover this; kept as a second line of defence.
		l.Close()
		return &ledger.Error{Path: path, Line: l.Lines() + 1, Damage: ledger.Truncated, Checkpoint: t.resumed.From, Fix: ledgerFix,
			Detail: fmt.Sprintf("it reaches step %d, but the checkpoint resumed from is at step %d", l.Top(), start)}
	}
	t.ledger = l
	if err := t.live.Replay(l.Records()); err != nil {
		return fmt.Errorf("privacy ledger %s: %w", path, err)
	}
	t.abandoned = l.Executed() - start
	if t.abandoned > 0 {
		t.live.voidHiddenState(t.declaredRun(t.opt), t.abandoned)
		t.log.Warnf("privacy ledger: this run has already executed %d private steps on its data, %d of them on branches it abandoned (continuing from step %d); ε counts all %d and continues from there: privacy spent is never given back",
			l.Executed(), t.abandoned, start, l.Executed())
	}
	return nil
}
