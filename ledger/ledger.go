package ledger

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"

	"github.com/dptrain/dptrain/accounting"
)

// FileName is the name a ledger file has in the directory that holds it (a run's private
// directory, or a library session's ledger store).
const FileName = "ledger.jsonl"

// Genesis is the "prev" of a ledger's first line (the SHA-256, in hex, of a fixed string: a
// ledger has no identity of its own to bind it to; the checkpoints' heads bind it to its run).
var Genesis = func() string {
	h := sha256.Sum256([]byte("dptrain privacy ledger v1"))
	return hex.EncodeToString(h[:])
}()

// line is one line of a ledger file.
type line struct {
	// Prev is the SHA-256 (hex) of the previous line's bytes; Genesis on the first.
	Prev string `json:"prev"`
	// Branch counts the sessions that continued the run from a checkpoint older than the
	// ledger (0: the first branch).
	Branch int `json:"branch"`
	// Step is the step's number on its branch (1-based).
	Step int `json:"step"`
	// Records are what the step released, as the optimizer declared them.
	Records []accounting.Step `json:"records"`
}

// Damage names what is wrong with a ledger.
type Damage string

// The damage a *Error reports.
const (
	// Missing: there is no ledger file (or it was removed while the run wrote it).
	Missing Damage = "missing"
	// Malformed: a line is not a ledger record.
	Malformed Damage = "malformed"
	// Truncated: the ledger holds fewer lines than a checkpoint recorded.
	Truncated Damage = "truncated"
	// Edited: a line was changed after it was written.
	Edited Damage = "edited"
	// Reordered: a line stands before a line it follows.
	Reordered Damage = "reordered"
	// Inserted: lines that do not belong to the chain were inserted.
	Inserted Damage = "inserted"
	// BrokenChain: a line does not carry the hash of the line before it, and of no line
	// of the ledger (lines between them were removed).
	BrokenChain Damage = "broken chain"
	// HeadMismatch: the chain verifies, but the line at a checkpoint's length is not
	// the one it recorded (the ledger was rewritten up to it, or replaced).
	HeadMismatch Damage = "head mismatch"
	// Unchained: the checkpoint records no head, having been written by a dptrain from
	// before the ledger was chained: the ledger cannot be verified against it.
	Unchained Damage = "unchained"
	// Replaced: the file at the ledger's path is no longer the one the run writes.
	Replaced Damage = "replaced"
)

// Error is the error of a ledger that is damaged: ε is never computed from it, since its
// records may not be the steps that were executed.
type Error struct {
	// Path is the ledger file.
	Path string
	// Line is the 1-based line where the damage was found (0: the file as a whole).
	Line int
	// Damage says what is wrong; Detail says what was found.
	Damage Damage
	Detail string
	// Checkpoint is the checkpoint whose record of the ledger (its Anchor) was not met, if any.
	Checkpoint string
	// Running reports that the damage was found while the ledger was being written, not when
	// it was read.
	Running bool
	// Fix says what the operator can do; when empty, the message suggests restoring the file
	// from a backup. The program that owns the ledger fills it in its own terms.
	Fix string
}

func (e *Error) Error() string {
	at := ""
	if e.Line > 0 {
		at = fmt.Sprintf(", line %d", e.Line)
	}
	state := "is damaged"
	why := "ε is never computed from a damaged one (its records may not be the steps that were executed), so the run cannot continue from it"
	do := fmt.Sprintf("restore %s from a backup", e.Path)
	switch {
	case e.Damage == Unchained:
		state = "cannot be verified"
		why = "it cannot be verified against that checkpoint, so this dptrain does not continue the run"
		do = "finish the run with the dptrain that wrote it"
	case e.Running:
		why = "the run stops so that no further step goes unrecorded"
	}
	if e.Fix != "" {
		do = e.Fix
	}
	return fmt.Sprintf("privacy ledger %s %s (%s%s): %s. The ledger records the privacy spent on the data, and %s. To go on, %s; the privacy already spent on the data still counts",
		e.Path, state, e.Damage, at, e.Detail, why, do)
}

// lineInfo is what verifying the chain needs of one line of a ledger.
type lineInfo struct {
	hash         string
	prev         string
	branch, step int
	err          error // not a ledger line
}

// Anchor is a checkpoint's record of a ledger: its length and head when the checkpoint was
// written.
type Anchor struct {
	// Lines is the number of lines the ledger had; Head the hash (hex) of the last of them
	// (Genesis for none).
	Lines int
	Head  string
	// From names the checkpoint, for messages.
	From string
}

// File is an open ledger: verified when it was opened, and appended to one line per step.
// A File is not safe for concurrent use.
type File struct {
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
	// lines is the number of lines, head the hash (hex) of the last (Genesis for none), and
	// hashes every line's hash, for checking a checkpoint's Anchor after the file was opened.
	lines  int
	head   string
	hashes []string
	// branched: this File has started a new branch (Append).
	branched bool
}

// check returns an error when ll cannot follow the lines before it: on one branch the steps
// are numbered 1, 2, 3, ... without a gap or a repeat; a new branch (Branch one more)
// continues from a checkpoint the ledger has reached.
func (l *File) check(ll lineInfo) error {
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
func (l *File) addRecords(records []accounting.Step) {
	for _, r := range records {
		l.records = accounting.AppendRecord(l.records, r)
		l.recordSteps += r.Steps()
	}
}

// add counts a verified line (its records apart) in the in-memory ledger.
func (l *File) add(info lineInfo) {
	l.executed++
	l.last = info.step
	l.top = max(l.top, l.last)
	l.branch = max(l.branch, info.branch)
	l.lines++
	l.head = info.hash
	l.hashes = append(l.hashes, info.hash)
}

func hashLine(b []byte) string {
	h := sha256.Sum256(b)
	return hex.EncodeToString(h[:])
}

// Open opens the ledger at path for appending, after reading it and verifying its chain
// and every anchor (the checkpoints' records of it). create says whether a missing file may
// be created (a new run); a resume needs the file. A last line cut short by a crash (no
// newline) is removed, with a warning through warn, once the rest verifies: the step it
// recorded was cut short too, before any checkpoint. A damaged ledger gives a *Error
// and is left as it was found.
func Open(path string, anchors []Anchor, create bool, warn func(format string, args ...any)) (*File, error) {
	flag := os.O_RDWR
	_, err := os.Stat(path)
	created := create && errors.Is(err, os.ErrNotExist)
	if created {
		flag |= os.O_CREATE
	}
	f, err := os.OpenFile(path, flag, 0o600)
	if errors.Is(err, os.ErrNotExist) {
		e := &Error{Path: path, Damage: Missing, Detail: "there is no ledger file, though the run has written checkpoints"}
		if len(anchors) > 0 {
			e.Checkpoint = anchors[0].From
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
	l, good, err := verify(path, b, anchors)
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

// verify reads the ledger b (the file at path) into a File: every line must be a
// ledger record carrying the hash of the line before it, with its steps in sequence, and the
// ledger must reach every anchor's length with the line there hashing to its head. It returns
// the number of bytes verified: an unterminated last line (a write cut short) is not counted.
func verify(path string, b []byte, anchors []Anchor) (*File, int, error) {
	// The records are counted as they are read (a ledger that does not verify is dropped
	// whole); only what the chain needs is kept of each line.
	l := &File{path: path, head: Genesis}
	var infos []lineInfo
	good := 0
	for rest := b; len(rest) > 0; {
		i := bytes.IndexByte(rest, '\n')
		if i < 0 {
			break // a torn last line
		}
		text := rest[:i]
		rest = rest[i+1:]
		good += i + 1
		var ll line
		info := lineInfo{hash: hashLine(text)}
		if err := json.Unmarshal(text, &ll); err != nil {
			info.err = err
		} else {
			info.prev, info.branch, info.step = ll.Prev, ll.Branch, ll.Step
			l.addRecords(ll.Records)
		}
		infos = append(infos, info)
	}
	torn := good < len(b)
	bad := func(line int, d Damage, format string, args ...any) (*File, int, error) {
		return nil, 0, &Error{Path: path, Line: line, Damage: d, Detail: fmt.Sprintf(format, args...)}
	}
	for k, info := range infos {
		n := k + 1 // the line's number
		if info.err != nil {
			return bad(n, Malformed, "line %d is not a ledger record (%v)", n, info.err)
		}
		if info.prev != l.head {
			return chainBreak(path, infos, k, l)
		}
		if err := l.check(info); err != nil {
			return bad(n, Edited, "line %d is chained to the line before it, but out of sequence (%v): lines were edited and chained again", n, err)
		}
		l.add(info)
	}
	// The resumed checkpoint first, then the others from the oldest.
	if len(anchors) > 1 {
		slices.SortStableFunc(anchors[1:], func(a, b Anchor) int { return a.Lines - b.Lines })
	}
	for _, a := range anchors {
		switch {
		case a.Lines > len(infos):
			e := &Error{Path: path, Line: len(infos) + 1, Damage: Truncated, Checkpoint: a.From,
				Detail: fmt.Sprintf("it holds %d lines, but checkpoint %s was written when it held %d: lines were removed from its end", len(infos), a.From, a.Lines)}
			if torn {
				e.Detail += fmt.Sprintf(" (line %d is incomplete)", len(infos)+1)
			}
			return nil, 0, e
		case a.Lines < 0, a.Lines == 0 && a.Head != Genesis, a.Lines > 0 && infos[a.Lines-1].hash != a.Head:
			got := Genesis
			if a.Lines > 0 {
				got = infos[a.Lines-1].hash
			}
			return nil, 0, &Error{Path: path, Line: a.Lines, Damage: HeadMismatch, Checkpoint: a.From,
				Detail: fmt.Sprintf("its chain is whole, but line %d hashes to %.16s…, and checkpoint %s recorded %.16s… as the ledger's head at %d lines: the lines up to it were rewritten (edited and chained again) or replaced, or the checkpoint is another run's",
					a.Lines, got, a.From, a.Head, a.Lines)}
		}
	}
	return l, good, nil
}

// chainBreak classifies the damage at line k (0-based), whose prev is not the hash of the
// line before it; l holds the lines before k.
func chainBreak(path string, infos []lineInfo, k int, l *File) (*File, int, error) {
	n := k + 1
	bad := func(line int, d Damage, format string, args ...any) (*File, int, error) {
		return nil, 0, &Error{Path: path, Line: line, Damage: d, Detail: fmt.Sprintf(format, args...)}
	}
	carried := -2 // the line whose hash line k carries: -1 the genesis, -2 none
	if infos[k].prev == Genesis {
		carried = -1
	}
	for j := range infos {
		if carried == -2 && j != k && infos[j].hash == infos[k].prev {
			carried = j
		}
	}
	switch {
	case carried >= k:
		return bad(n, Reordered, "line %d carries the hash of line %d, which comes after it: lines were moved", n, carried+1)
	case carried > -2:
		// Line k follows line carried+1 (the genesis): either lines carried+2..k were
		// inserted before it, or line k itself was inserted out of place, when a later line
		// carries the hash of line k (0-based k-1), the line before it.
		for m := k + 1; m < len(infos) && k > 0; m++ {
			if infos[m].prev == infos[k-1].hash {
				if m == k+1 {
					return bad(n, Inserted, "line %d does not belong to the chain (it carries the hash of line %d, and line %d follows line %d): it was inserted", n, carried+1, m+1, k)
				}
				return bad(n, Inserted, "lines %d to %d do not belong to the chain (line %d carries the hash of line %d, and line %d follows line %d): they were inserted", n, m, n, carried+1, m+1, k)
			}
		}
		if carried+2 == n-1 {
			return bad(carried+2, Inserted, "line %d carries the hash of line %d, not of line %d: line %d was inserted", n, carried+1, n-1, n-1)
		}
		return bad(carried+2, Inserted, "line %d carries the hash of line %d, not of line %d: lines %d to %d were inserted", n, carried+1, n-1, carried+2, n-1)
	case k == 0:
		return bad(n, BrokenChain, "line 1 does not start the chain (its prev is not the ledger's genesis hash, nor the hash of any line): lines were removed from its start, or line 1 was edited")
	case l.check(infos[k]) == nil:
		// Consecutive steps: line k was changed, or the hash line k+1 carries of it.
		return bad(k, Edited, "line %d was changed after it was written: line %d, the next step, carries a hash that matches no line of the ledger", k, n)
	default:
		return bad(n, BrokenChain, "line %d (step %d of branch %d) does not follow line %d (step %d of branch %d) and carries the hash of no line of the ledger: lines between them were removed",
			n, infos[k].step, infos[k].branch, k, l.last, l.branch)
	}
}

// Append writes one step's records as a line, in one write, and counts them; then it checks
// that the file at the ledger's path is still the one written. step is the step's number on
// the trajectory it continues: a step that does not follow the ledger's last line (the
// trajectory continues from an older checkpoint, or starts anew) opens a new branch, as the
// ledger's sequence rules require.
func (l *File) Append(step int, records []accounting.Step) error {
	branch := l.branch
	if l.lines > 0 && !l.branched && step != l.last+1 {
		branch++
	}
	if err := l.check(lineInfo{branch: branch, step: step}); err != nil {
		return fmt.Errorf("privacy ledger %s: step %d cannot be recorded: %v", l.path, step, err)
	}
	l.branched = l.branched || branch != l.branch
	l.branch = branch
	b, err := json.Marshal(line{Prev: l.head, Branch: l.branch, Step: step, Records: records})
	if err != nil {
		return fmt.Errorf("privacy ledger: %w", err)
	}
	if _, err := l.f.Write(append(b, '\n')); err != nil {
		return fmt.Errorf("privacy ledger %s: %w", l.path, err)
	}
	l.addRecords(records)
	l.add(lineInfo{hash: hashLine(b), branch: l.branch, step: step})
	return l.CheckFile()
}

// CheckFile returns a *Error when the file at the ledger's path is not the one open
// (it was removed, or replaced by another file): lines written now would reach no ledger a
// resume reads.
func (l *File) CheckFile() error {
	held, err := l.f.Stat()
	if err != nil {
		return fmt.Errorf("privacy ledger %s: %w", l.path, err)
	}
	fi, err := os.Stat(l.path)
	switch {
	case errors.Is(err, os.ErrNotExist):
		return &Error{Path: l.path, Line: l.lines, Damage: Missing, Running: true,
			Detail: fmt.Sprintf("the file was removed while the run was writing it, after its line %d (step %d)", l.lines, l.last)}
	case err != nil:
		return fmt.Errorf("privacy ledger %s: %w", l.path, err)
	case !os.SameFile(held, fi):
		return &Error{Path: l.path, Line: l.lines, Damage: Replaced, Running: true,
			Detail: fmt.Sprintf("another file was put in its place while the run was writing it, after its line %d (step %d)", l.lines, l.last)}
	}
	return nil
}

// Sync flushes the ledger to stable storage (before every checkpoint, so that a checkpoint is
// never on disk without the steps before it).
func (l *File) Sync() error {
	if err := l.f.Sync(); err != nil {
		return fmt.Errorf("privacy ledger %s: %w", l.path, err)
	}
	return nil
}

// Close closes the file.
func (l *File) Close() error { return l.f.Close() }

// Path returns the ledger file's path.
func (l *File) Path() string { return l.path }

// Records returns the run-length list of every record of every line (accounting.AppendRecord).
func (l *File) Records() []accounting.Step { return slices.Clone(l.records) }

// Executed returns the number of steps the ledger holds, over every branch.
func (l *File) Executed() int { return l.executed }

// Top returns the largest step number on any branch: the furthest any trajectory went.
func (l *File) Top() int { return l.top }

// Lines returns the number of lines, and Head the hash (hex) of the last (Genesis for none).
func (l *File) Lines() int { return l.lines }

// Head returns the hash (hex) of the last line (Genesis for none).
func (l *File) Head() string { return l.head }

// Anchor returns the ledger's length and head now, for a checkpoint named from.
func (l *File) Anchor(from string) Anchor { return Anchor{Lines: l.lines, Head: l.head, From: from} }

// Reaches returns a *Error unless the ledger holds a's line with a's hash: a checkpoint
// written with this ledger, at or before its end.
func (l *File) Reaches(a Anchor) error {
	switch {
	case a.Head == "":
		return &Error{Path: l.path, Damage: Unchained, Checkpoint: a.From,
			Detail: fmt.Sprintf("checkpoint %s records no ledger head: it was written without this ledger", a.From)}
	case a.Lines > l.lines:
		return &Error{Path: l.path, Line: l.lines + 1, Damage: Truncated, Checkpoint: a.From,
			Detail: fmt.Sprintf("it holds %d lines, but checkpoint %s was written when its ledger held %d: lines were removed from its end, or the checkpoint was written with another ledger", l.lines, a.From, a.Lines)}
	}
	got := Genesis
	if a.Lines > 0 {
		got = l.hashes[a.Lines-1]
	}
	if a.Lines < 0 || got != a.Head {
		return &Error{Path: l.path, Line: a.Lines, Damage: HeadMismatch, Checkpoint: a.From,
			Detail: fmt.Sprintf("line %d hashes to %.16s…, and checkpoint %s recorded %.16s… as the ledger's head at %d lines: the checkpoint was written with another ledger, or the ledger was rewritten", a.Lines, got, a.From, a.Head, a.Lines)}
	}
	return nil
}
