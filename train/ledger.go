package train

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/dptrain/dptrain/accounting"
)

// LedgerFile is the run's privacy ledger in its PrivateDir: one JSON line per private step ever
// executed on the run's data, on every branch of the run. It only grows. A resume from any
// checkpoint, the newest or an older one (--resume-from), reads it whole and composes every
// line into the live accountants, so that ε counts the steps of abandoned branches too:
// privacy spent is never given back, however the run is continued. The checkpoints keep their
// own copy of the ledger (as of their writing) only as a fallback for a run directory written
// before this file existed.
const LedgerFile = "ledger.jsonl"

// ledgerLine is one line of LedgerFile.
type ledgerLine struct {
	// Branch counts the sessions that continued the run from a checkpoint older than the
	// ledger (0: the first branch).
	Branch int `json:"branch"`
	// Step is the step's number on its branch (1-based); 0 for a line restored from a
	// checkpoint's copy of the ledger.
	Step int `json:"step"`
	// Steps is set on a line restored from a checkpoint's copy of the ledger: the number of
	// steps it stands for (a step line stands for one).
	Steps int `json:"steps,omitempty"`
	// Records are what the step released, as the optimizer declared them.
	Records []accounting.Step `json:"records"`
}

// runLedger is the open LedgerFile of a run.
type runLedger struct {
	path   string
	f      *os.File
	branch int
	// records is the run-length ledger of every line read or appended.
	records []accounting.Step
	// recordSteps is the records' counts summed (a multi-record step counts once per
	// record, as accounting.Live counts them); executed is the number of training steps the
	// ledger holds, over every branch.
	recordSteps, executed int
	// last is the step number of the last line (a restored line's Steps), and top the largest
	// step number on any branch: a new branch continues from a checkpoint at most at top.
	last, top int
	lines     int
}

// check returns an error when ll cannot follow the lines before it: on one branch the steps
// are numbered 1, 2, 3, ... without a gap or a repeat (a restored line stands for steps
// 1..Steps); a new branch (Branch one more) continues from a checkpoint the ledger has
// reached. A line duplicated, deleted or edited by hand, or two processes writing one
// ledger, break this.
func (l *runLedger) check(ll ledgerLine) error {
	first := l.lines == 0
	switch {
	case ll.Step < 0 || ll.Steps < 0 || ll.Branch < 0:
		return fmt.Errorf("negative step, count or branch")
	case ll.Step == 0 && ll.Steps == 0:
		return fmt.Errorf("no step number")
	case ll.Step == 0: // a restored checkpoint ledger: the first line of its branch
		if !first && ll.Branch != l.branch+1 {
			return fmt.Errorf("a restored ledger copy in the middle of branch %d", ll.Branch)
		}
	case first && ll.Branch == 0 && ll.Step != 1:
		return fmt.Errorf("the ledger starts at step %d, not 1", ll.Step)
	case first:
		// A ledger restored from elsewhere may start on a later branch; its numbers are
		// checked from here on.
	case ll.Branch == l.branch && ll.Step != l.last+1:
		return fmt.Errorf("step %d follows step %d on branch %d", ll.Step, l.last, ll.Branch)
	case ll.Branch == l.branch+1 && ll.Step > l.top+1:
		return fmt.Errorf("branch %d starts at step %d, beyond the %d steps executed before it", ll.Branch, ll.Step, l.top)
	case ll.Branch != l.branch && ll.Branch != l.branch+1:
		return fmt.Errorf("branch %d follows branch %d", ll.Branch, l.branch)
	}
	return nil
}

// openLedger reads the ledger at path, if there is one, and opens it for appending. A last
// line cut short by a crash is removed (with a warning through warn): the step it recorded
// was cut short too, before its metrics and any checkpoint.
func openLedger(path string, warn func(format string, args ...any)) (*runLedger, error) {
	l := &runLedger{path: path}
	b, err := os.ReadFile(path)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return nil, fmt.Errorf("privacy ledger: %w", err)
	}
	good := 0
	sc := bufio.NewScanner(bytes.NewReader(b))
	sc.Buffer(make([]byte, 0, 64*1024), 64*1024*1024)
	for sc.Scan() {
		line := sc.Bytes()
		end := good + len(line) + 1
		if end > len(b) { // no newline: a torn write
			warn("privacy ledger %s: removing its last line, cut short by a crash", path)
			break
		}
		var ll ledgerLine
		err := json.Unmarshal(line, &ll)
		if err == nil {
			err = l.check(ll)
		}
		if err != nil {
			return nil, fmt.Errorf("privacy ledger %s: line %d (at byte %d): %v: the ledger is damaged; it is the record of the privacy this run spent, so repair it by hand (never shorten it) or start a new run in another output.dir", path, l.lines+1, good, err)
		}
		l.add(ll)
		good = end
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("privacy ledger %s: %w", path, err)
	}
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("privacy ledger: %w", err)
	}
	if good < len(b) {
		if err := f.Truncate(int64(good)); err != nil {
			f.Close()
			return nil, fmt.Errorf("privacy ledger: %w", err)
		}
	}
	if _, err := f.Seek(0, io.SeekEnd); err != nil {
		f.Close()
		return nil, fmt.Errorf("privacy ledger: %w", err)
	}
	l.f = f
	return l, nil
}

// add counts ll in the in-memory ledger.
func (l *runLedger) add(ll ledgerLine) {
	for _, r := range ll.Records {
		l.records = accounting.AppendRecord(l.records, r)
		l.recordSteps += r.Steps()
	}
	if ll.Steps > 0 {
		l.executed += ll.Steps
		l.last = ll.Steps
	} else {
		l.executed++
		l.last = ll.Step
	}
	l.top = max(l.top, l.last)
	l.branch = max(l.branch, ll.Branch)
	l.lines++
}

// append writes one step's records as a line, in one write, and counts them.
func (l *runLedger) append(step int, records []accounting.Step) error {
	return l.write(ledgerLine{Branch: l.branch, Step: step, Records: records})
}

// restore appends the ledger of a checkpoint (written before this file existed, or with the
// file lost) as one line standing for its steps.
func (l *runLedger) restore(steps int, records []accounting.Step) error {
	if err := l.write(ledgerLine{Branch: l.branch, Steps: max(steps, 1), Records: records}); err != nil {
		return err
	}
	return l.sync()
}

// write appends ll as one line, in one write, and counts it.
func (l *runLedger) write(ll ledgerLine) error {
	b, err := json.Marshal(ll)
	if err != nil {
		return fmt.Errorf("privacy ledger: %w", err)
	}
	if _, err := l.f.Write(append(b, '\n')); err != nil {
		return fmt.Errorf("privacy ledger %s: %w", l.path, err)
	}
	l.add(ll)
	return nil
}

// sync flushes the ledger to stable storage (at every checkpoint, so that a checkpoint is never
// on disk without the steps before it).
func (l *runLedger) sync() error {
	if err := l.f.Sync(); err != nil {
		return fmt.Errorf("privacy ledger %s: %w", l.path, err)
	}
	return nil
}

func (l *runLedger) close() error { return l.f.Close() }

// openLedger opens the run's ledger file and composes every step it holds into the live
// accountants, before the first step of this session. start is the step this session continues
// from (0 for a new run). Steps the ledger holds beyond start were executed on a branch the run
// abandoned (a resume from an older checkpoint, or a crash after the last one): they stay
// counted, the session starts a new branch, it says so in the log and in the summary, and the
// hidden-state accountants stop applying.
func (t *Trainer) openLedger(start int) error {
	if t.live == nil {
		return nil
	}
	path := PrivatePath(t.cfg.Output.Dir, LedgerFile)
	l, err := openLedger(path, t.log.Warnf)
	if err != nil {
		return err
	}
	t.ledger = l
	ckSteps := 0
	for _, r := range t.checkpointLedger {
		ckSteps += r.Steps()
	}
	switch {
	case l.recordSteps < ckSteps && l.executed == 0:
		// A run directory from before the ledger file (or one whose file was lost): the
		// checkpoint's copy is all there is. Steps run after it on other branches, if any,
		// cannot be counted.
		t.log.Warnf("privacy ledger %s is missing: restoring it from the checkpoint's copy (%d steps); steps executed after that checkpoint on other branches, if any, are not in it", path, start)
		if err := l.restore(start, t.checkpointLedger); err != nil {
			return err
		}
	case l.recordSteps < ckSteps:
		return fmt.Errorf("privacy ledger %s holds fewer steps (%d records) than the checkpoint's copy (%d): it was shortened, which would give privacy back. Restore it from a backup, or start a new run in another output.dir", path, l.recordSteps, ckSteps)
	case l.top < start:
		// The checkpoint's steps were all recorded before it was written (the ledger is
		// synced first): a ledger that never reached them was shortened or replaced.
		return fmt.Errorf("privacy ledger %s reaches step %d, but the checkpoint resumed from is at step %d: the ledger was shortened or replaced, which would give privacy back. Restore it from a backup, or start a new run in another output.dir", path, l.top, start)
	}
	if err := t.live.Replay(l.records); err != nil {
		return fmt.Errorf("privacy ledger %s: %w", path, err)
	}
	t.abandoned = l.executed - start
	if t.abandoned > 0 {
		l.branch++
		t.live.voidHiddenState(t.declaredRun(t.opt), t.abandoned)
		t.log.Warnf("privacy ledger: this run has already executed %d private steps on its data, %d of them on branches it abandoned (continuing from step %d); ε counts all %d and continues from there: privacy spent is never given back",
			l.executed, t.abandoned, start, l.executed)
	}
	return nil
}
