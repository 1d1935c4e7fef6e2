package train

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"

	"github.com/dptrain/dptrain/accounting"
)

// LedgerFile is the run's privacy ledger in its PrivateDir: one JSON line per private step ever
// executed on the run's data, on every branch of the run. It only grows. A resume from any
// checkpoint, the newest or an older one (--resume-from), reads it whole and composes every
// line into the live accountants, so that ε counts the steps of abandoned branches too:
// privacy spent is never given back, however the run is continued.
//
// The ledger is tamper-evident. Each line carries in "prev" the SHA-256 (hex) of the bytes of
// the line before it (without its newline); the first line carries LedgerGenesis. Every
// checkpoint records the number of lines the ledger had when it was written and the hash of
// the last of them (LedgerLines, LedgerHead in its checksummed header). A ledger is read only
// when its chain verifies line by line and it reaches the head of every checkpoint of the run:
// a line deleted, edited, moved or inserted, a ledger cut short or missing, all stop the run
// with a *LedgerError instead of yielding a smaller ε. Lines after the newest checkpoint's head
// are checked only for their chain: dropping them, or editing the very last line, cannot be
// told from a crash before they were written.
const LedgerFile = "ledger.jsonl"

// LedgerGenesis is the "prev" of a ledger's first line (the SHA-256, in hex, of a fixed string:
// run directories have no identity of their own to bind it to; the checkpoints' heads bind the
// ledger to the run).
var LedgerGenesis = func() string {
	h := sha256.Sum256([]byte("dptrain privacy ledger v1"))
	return hex.EncodeToString(h[:])
}()

// ledgerLine is one line of LedgerFile.
type ledgerLine struct {
	// Prev is the SHA-256 (hex) of the previous line's bytes; LedgerGenesis on the first.
	Prev string `json:"prev"`
	// Branch counts the sessions that continued the run from a checkpoint older than the
	// ledger (0: the first branch).
	Branch int `json:"branch"`
	// Step is the step's number on its branch (1-based).
	Step int `json:"step"`
	// Records are what the step released, as the optimizer declared them.
	Records []accounting.Step `json:"records"`
}

// LedgerDamage names what is wrong with a ledger.
type LedgerDamage string

// The damage a *LedgerError reports.
const (
	// LedgerMissing: there is no ledger file (or it was removed while the run wrote it).
	LedgerMissing LedgerDamage = "missing"
	// LedgerMalformed: a line is not a ledger record.
	LedgerMalformed LedgerDamage = "malformed"
	// LedgerTruncated: the ledger holds fewer lines than a checkpoint recorded.
	LedgerTruncated LedgerDamage = "truncated"
	// LedgerEdited: a line was changed after it was written.
	LedgerEdited LedgerDamage = "edited"
	// LedgerReordered: a line stands before a line it follows.
	LedgerReordered LedgerDamage = "reordered"
	// LedgerInserted: lines that do not belong to the chain were inserted.
	LedgerInserted LedgerDamage = "inserted"
	// LedgerBrokenChain: a line does not carry the hash of the line before it, and of no line
	// of the ledger (lines between them were removed).
	LedgerBrokenChain LedgerDamage = "broken chain"
	// LedgerHeadMismatch: the chain verifies, but the line at a checkpoint's length is not
	// the one it recorded (the ledger was rewritten up to it, or replaced).
	LedgerHeadMismatch LedgerDamage = "head mismatch"
	// LedgerUnchained: the checkpoint records no head, having been written by a dptrain from
	// before the ledger was chained: the ledger cannot be verified against it.
	LedgerUnchained LedgerDamage = "unchained"
	// LedgerReplaced: the file at the ledger's path is no longer the one the run writes.
	LedgerReplaced LedgerDamage = "replaced"
)

// LedgerError is the error of a run whose privacy ledger is damaged: ε is never computed from
// it, since its records may not be the steps that were executed.
type LedgerError struct {
	// Path is the ledger file.
	Path string
	// Line is the 1-based line where the damage was found (0: the file as a whole).
	Line int
	// Damage says what is wrong; Detail says what was found.
	Damage LedgerDamage
	Detail string
	// Checkpoint is the checkpoint whose record of the ledger (its length and head) was not
	// met, if any.
	Checkpoint string
	// running: found while the run was writing the ledger, not when it was read.
	running bool
}

func (e *LedgerError) Error() string {
	at := ""
	if e.Line > 0 {
		at = fmt.Sprintf(", line %d", e.Line)
	}
	state := "is damaged"
	why := "ε is never computed from a damaged one (its records may not be the steps that were executed), so the run cannot continue from it"
	do := fmt.Sprintf("restore %s from a backup and resume again, or start a new run in another output.dir", filepath.Join(PrivateDir, LedgerFile))
	switch {
	case e.Damage == LedgerUnchained:
		state = "cannot be verified"
		why = "it cannot be verified against that checkpoint, so this dptrain does not resume the run"
		do = "finish the run with the dptrain that wrote it, or start a new run in another output.dir"
	case e.running:
		why = "the run stops so that no further step goes unrecorded"
	}
	return fmt.Sprintf("privacy ledger %s %s (%s%s): %s. The ledger records the privacy this run has spent, and %s. To go on, %s; the privacy already spent on the data still counts",
		e.Path, state, e.Damage, at, e.Detail, why, do)
}

// lineInfo is what verifying the chain needs of one line of a ledger.
type lineInfo struct {
	hash         string
	prev         string
	branch, step int
	err          error // not a ledger line
}

// ledgerAnchor is a checkpoint's record of the ledger: its length and head when the checkpoint
// was written.
type ledgerAnchor struct {
	lines int
	head  string
	from  string // the checkpoint's path
}

// runLedger is the open LedgerFile of a run.
type runLedger struct {
	path string
	f    *os.File
	// branch is the branch appended lines belong to.
	branch int
	// records is the run-length ledger of every line read or appended.
	records []accounting.Step
	// recordSteps is the records' counts summed (a multi-record step counts once per
	// record, as accounting.Live counts them); executed is the number of training steps the
	// ledger holds, over every branch.
	recordSteps, executed int
	// last is the step number of the last line, and top the largest step number on any
	// branch: a new branch continues from a checkpoint at most at top.
	last, top int
	// lines is the number of lines, head the hash (hex) of the last (LedgerGenesis for none).
	lines int
	head  string
}

// check returns an error when ll cannot follow the lines before it: on one branch the steps
// are numbered 1, 2, 3, ... without a gap or a repeat; a new branch (Branch one more)
// continues from a checkpoint the ledger has reached.
func (l *runLedger) check(ll lineInfo) error {
	switch {
	case ll.step < 1 || ll.branch < 0:
		return fmt.Errorf("step %d of branch %d", ll.step, ll.branch)
	case l.lines == 0 && (ll.branch != 0 || ll.step != 1):
		return fmt.Errorf("the ledger starts at step %d of branch %d, not step 1 of branch 0", ll.step, ll.branch)
	case l.lines == 0:
	case ll.branch == l.branch && ll.step != l.last+1:
		return fmt.Errorf("step %d follows step %d on branch %d", ll.step, l.last, ll.branch)
	case ll.branch == l.branch+1 && ll.step > l.top+1:
		return fmt.Errorf("branch %d starts at step %d, beyond the %d steps executed before it", ll.branch, ll.step, l.top)
	case ll.branch != l.branch && ll.branch != l.branch+1:
		return fmt.Errorf("branch %d follows branch %d", ll.branch, l.branch)
	}
	return nil
}

// addRecords counts a line's records in the in-memory ledger.
func (l *runLedger) addRecords(records []accounting.Step) {
	for _, r := range records {
		l.records = accounting.AppendRecord(l.records, r)
		l.recordSteps += r.Steps()
	}
}

// add counts a verified line (its records apart) in the in-memory ledger.
func (l *runLedger) add(info lineInfo) {
	l.executed++
	l.last = info.step
	l.top = max(l.top, l.last)
	l.branch = max(l.branch, info.branch)
	l.lines++
	l.head = info.hash
}

func hashLine(b []byte) string {
	h := sha256.Sum256(b)
	return hex.EncodeToString(h[:])
}

// openLedger opens the ledger at path for appending, after reading it and verifying its chain
// and every anchor (the checkpoints' records of it). create says whether a missing file may
// be created (a new run); a resume needs the file. A last line cut short by a crash (no
// newline) is removed, with a warning through warn, once the rest verifies: the step it
// recorded was cut short too, before any checkpoint. A damaged ledger gives a *LedgerError
// and is left as it was found.
func openLedger(path string, anchors []ledgerAnchor, create bool, warn func(format string, args ...any)) (*runLedger, error) {
	flag := os.O_RDWR
	_, err := os.Stat(path)
	created := create && errors.Is(err, os.ErrNotExist)
	if created {
		flag |= os.O_CREATE
	}
	f, err := os.OpenFile(path, flag, 0o600)
	if errors.Is(err, os.ErrNotExist) {
		e := &LedgerError{Path: path, Damage: LedgerMissing, Detail: "there is no ledger file, though the run has written checkpoints"}
		if len(anchors) > 0 {
			e.Checkpoint = anchors[0].from
		}
		return nil, e
	}
	if err != nil {
		return nil, fmt.Errorf("privacy ledger: %w", err)
	}
	b, err := io.ReadAll(f)
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("privacy ledger %s: %w", path, err)
	}
	l, good, err := verifyLedger(path, b, anchors)
	if err != nil {
		f.Close()
		if created { // left as it was found: absent
			os.Remove(path)
		}
		return nil, err
	}
	if good < len(b) {
		warn("privacy ledger %s: removing its last line, cut short by a crash", path)
		if err := f.Truncate(int64(good)); err != nil {
			f.Close()
			return nil, fmt.Errorf("privacy ledger: %w", err)
		}
	}
	if _, err := f.Seek(int64(good), io.SeekStart); err != nil {
		f.Close()
		return nil, fmt.Errorf("privacy ledger: %w", err)
	}
	l.f = f
	return l, nil
}

// verifyLedger reads the ledger b (the file at path) into a runLedger: every line must be a
// ledger record carrying the hash of the line before it, with its steps in sequence, and the
// ledger must reach every anchor's length with the line there hashing to its head. It returns
// the number of bytes verified: an unterminated last line (a write cut short) is not counted.
func verifyLedger(path string, b []byte, anchors []ledgerAnchor) (*runLedger, int, error) {
	// The records are counted as they are read (a ledger that does not verify is dropped
	// whole); only what the chain needs is kept of each line.
	l := &runLedger{path: path, head: LedgerGenesis}
	var infos []lineInfo
	good := 0
	for rest := b; len(rest) > 0; {
		i := bytes.IndexByte(rest, '\n')
		if i < 0 {
			break // a torn last line
		}
		line := rest[:i]
		rest = rest[i+1:]
		good += i + 1
		var ll ledgerLine
		info := lineInfo{hash: hashLine(line)}
		if err := json.Unmarshal(line, &ll); err != nil {
			info.err = err
		} else {
			info.prev, info.branch, info.step = ll.Prev, ll.Branch, ll.Step
			l.addRecords(ll.Records)
		}
		infos = append(infos, info)
	}
	torn := good < len(b)
	bad := func(line int, d LedgerDamage, format string, args ...any) (*runLedger, int, error) {
		return nil, 0, &LedgerError{Path: path, Line: line, Damage: d, Detail: fmt.Sprintf(format, args...)}
	}
	for k, info := range infos {
		n := k + 1 // the line's number
		if info.err != nil {
			return bad(n, LedgerMalformed, "line %d is not a ledger record (%v)", n, info.err)
		}
		if info.prev != l.head {
			return chainBreak(path, infos, k, l)
		}
		if err := l.check(info); err != nil {
			return bad(n, LedgerEdited, "line %d is chained to the line before it, but out of sequence (%v): lines were edited and chained again", n, err)
		}
		l.add(info)
	}
	// The resumed checkpoint first, then the others from the oldest.
	if len(anchors) > 1 {
		slices.SortStableFunc(anchors[1:], func(a, b ledgerAnchor) int { return a.lines - b.lines })
	}
	for _, a := range anchors {
		switch {
		case a.lines > len(infos):
			e := &LedgerError{Path: path, Line: len(infos) + 1, Damage: LedgerTruncated, Checkpoint: a.from,
				Detail: fmt.Sprintf("it holds %d lines, but checkpoint %s was written when it held %d: lines were removed from its end", len(infos), a.from, a.lines)}
			if torn {
				e.Detail += fmt.Sprintf(" (line %d is incomplete)", len(infos)+1)
			}
			return nil, 0, e
		case a.lines < 0, a.lines == 0 && a.head != LedgerGenesis, a.lines > 0 && infos[a.lines-1].hash != a.head:
			got := LedgerGenesis
			if a.lines > 0 {
				got = infos[a.lines-1].hash
			}
			return nil, 0, &LedgerError{Path: path, Line: a.lines, Damage: LedgerHeadMismatch, Checkpoint: a.from,
				Detail: fmt.Sprintf("its chain is whole, but line %d hashes to %.16s…, and checkpoint %s recorded %.16s… as the ledger's head at %d lines: the lines up to it were rewritten (edited and chained again) or replaced, or the checkpoint is another run's",
					a.lines, got, a.from, a.head, a.lines)}
		}
	}
	return l, good, nil
}

// chainBreak classifies the damage at line k (0-based), whose prev is not the hash of the
// line before it; l holds the lines before k.
func chainBreak(path string, infos []lineInfo, k int, l *runLedger) (*runLedger, int, error) {
	n := k + 1
	bad := func(line int, d LedgerDamage, format string, args ...any) (*runLedger, int, error) {
		return nil, 0, &LedgerError{Path: path, Line: line, Damage: d, Detail: fmt.Sprintf(format, args...)}
	}
	carried := -2 // the line whose hash line k carries: -1 the genesis, -2 none
	if infos[k].prev == LedgerGenesis {
		carried = -1
	}
	for j := range infos {
		if carried == -2 && j != k && infos[j].hash == infos[k].prev {
			carried = j
		}
	}
	switch {
	case carried >= k:
		return bad(n, LedgerReordered, "line %d carries the hash of line %d, which comes after it: lines were moved", n, carried+1)
	case carried > -2:
		// Line k follows line carried+1 (the genesis): either lines carried+2..k were
		// inserted before it, or line k itself was inserted out of place, when a later line
		// carries the hash of line k (0-based k-1), the line before it.
		for m := k + 1; m < len(infos) && k > 0; m++ {
			if infos[m].prev == infos[k-1].hash {
				if m == k+1 {
					return bad(n, LedgerInserted, "line %d does not belong to the chain (it carries the hash of line %d, and line %d follows line %d): it was inserted", n, carried+1, m+1, k)
				}
				return bad(n, LedgerInserted, "lines %d to %d do not belong to the chain (line %d carries the hash of line %d, and line %d follows line %d): they were inserted", n, m, n, carried+1, m+1, k)
			}
		}
		if carried+2 == n-1 {
			return bad(carried+2, LedgerInserted, "line %d carries the hash of line %d, not of line %d: line %d was inserted", n, carried+1, n-1, n-1)
		}
		return bad(carried+2, LedgerInserted, "line %d carries the hash of line %d, not of line %d: lines %d to %d were inserted", n, carried+1, n-1, carried+2, n-1)
	case k == 0:
		return bad(n, LedgerBrokenChain, "line 1 does not start the chain (its prev is not the ledger's genesis hash, nor the hash of any line): lines were removed from its start, or line 1 was edited")
	case l.check(infos[k]) == nil:
		// Consecutive steps: line k was changed, or the hash line k+1 carries of it.
		return bad(k, LedgerEdited, "line %d was changed after it was written: line %d, the next step, carries a hash that matches no line of the ledger", k, n)
	default:
		return bad(n, LedgerBrokenChain, "line %d (step %d of branch %d) does not follow line %d (step %d of branch %d) and carries the hash of no line of the ledger: lines between them were removed",
			n, infos[k].step, infos[k].branch, k, l.last, l.branch)
	}
}

// append writes one step's records as a line, in one write, and counts them; then it checks
// that the file at the ledger's path is still the one written.
func (l *runLedger) append(step int, records []accounting.Step) error {
	b, err := json.Marshal(ledgerLine{Prev: l.head, Branch: l.branch, Step: step, Records: records})
	if err != nil {
		return fmt.Errorf("privacy ledger: %w", err)
	}
	if _, err := l.f.Write(append(b, '\n')); err != nil {
		return fmt.Errorf("privacy ledger %s: %w", l.path, err)
	}
	l.addRecords(records)
	l.add(lineInfo{hash: hashLine(b), branch: l.branch, step: step})
	return l.checkFile()
}

// checkFile returns a *LedgerError when the file at the ledger's path is not the one open
// (it was removed, or replaced by another file): lines written now would reach no ledger a
// resume reads.
func (l *runLedger) checkFile() error {
	held, err := l.f.Stat()
	if err != nil {
		return fmt.Errorf("privacy ledger %s: %w", l.path, err)
	}
	fi, err := os.Stat(l.path)
	switch {
	case errors.Is(err, os.ErrNotExist):
		return &LedgerError{Path: l.path, Line: l.lines, Damage: LedgerMissing, running: true,
			Detail: fmt.Sprintf("the file was removed while the run was writing it, after its line %d (step %d)", l.lines, l.last)}
	case err != nil:
		return fmt.Errorf("privacy ledger %s: %w", l.path, err)
	case !os.SameFile(held, fi):
		return &LedgerError{Path: l.path, Line: l.lines, Damage: LedgerReplaced, running: true,
			Detail: fmt.Sprintf("another file was put in its place while the run was writing it, after its line %d (step %d)", l.lines, l.last)}
	}
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

// ledgerAnchors returns the records of the ledger (length and head) of every readable
// checkpoint of the run, the one resumed from (if any) first. A checkpoint that cannot be read
// is passed over with a warning; one written before the ledger was chained is passed over
// too, unless it is the one resumed from.
func (t *Trainer) ledgerAnchors() []ledgerAnchor {
	var anchors []ledgerAnchor
	var seen []os.FileInfo
	add := func(a ledgerAnchor) {
		if fi, err := os.Stat(a.from); err == nil {
			seen = append(seen, fi)
		}
		anchors = append(anchors, a)
	}
	if t.resumed != nil {
		add(*t.resumed)
	}
	dir := PrivatePath(t.cfg.Output.Dir)
	for _, path := range append(olderCheckpoints(dir), filepath.Join(dir, CheckpointFile)) {
		fi, err := os.Stat(path)
		if err != nil || slices.ContainsFunc(seen, func(s os.FileInfo) bool { return os.SameFile(s, fi) }) {
			continue
		}
		c, err := LoadCheckpoint(path)
		if err != nil {
			t.log.Warnf("the privacy ledger is not checked against %s, which cannot be read: %v", path, err)
			continue
		}
		if c.Header.LedgerHead == "" {
			continue
		}
		add(ledgerAnchor{lines: c.Header.LedgerLines, head: c.Header.LedgerHead, from: path})
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
	path := PrivatePath(t.cfg.Output.Dir, LedgerFile)
	if t.resumed != nil && t.resumed.head == "" {
		return &LedgerError{Path: path, Damage: LedgerUnchained, Checkpoint: t.resumed.from,
			Detail: fmt.Sprintf("checkpoint %s records no ledger head: it was written by a dptrain from before the ledger's lines were chained by hash", t.resumed.from)}
	}
	anchors := t.ledgerAnchors()
	l, err := openLedger(path, anchors, t.resumed == nil, t.log.Warnf)
	if err != nil {
		return err
	}
	if l.top < start {
		// The checkpoints' heads cover this; kept as a second line of defence.
		l.close()
		return &LedgerError{Path: path, Line: l.lines + 1, Damage: LedgerTruncated, Checkpoint: t.resumed.from,
			Detail: fmt.Sprintf("it reaches step %d, but the checkpoint resumed from is at step %d", l.top, start)}
	}
	t.ledger = l
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
