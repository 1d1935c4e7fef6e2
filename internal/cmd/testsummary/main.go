// Command testsummary reads `go test -json` on its standard input and prints what `go test`
// prints without -json — each package's ok or FAIL line, the output of failing tests, build
// errors — followed by every skipped test with its reason, and a closing line
// "tests: N passed, N failed, N skipped". It exits 1 when a test or a package failed (or a
// package did not build), so that a skip that matters is seen in make test's output instead of
// hiding behind an "ok".
//
//	go test -json ./... | go run ./internal/cmd/testsummary
package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"sort"
	"strings"
)

// event is one line of test2json's output (go doc test2json).
type event struct {
	Action     string
	Package    string
	ImportPath string
	Test       string
	Output     string
}

type summary struct {
	out                     io.Writer
	buf                     map[string][]string // a running test's output, by package and test
	skips                   []string
	passed, failed, skipped int
	bad                     bool
}

func (s *summary) add(e event) {
	key := e.Package + "\x00" + e.Test
	switch e.Action {
	case "build-output":
		fmt.Fprint(s.out, e.Output)
	case "build-fail":
		s.bad = true
	case "output":
		if e.Test == "" {
			// The package's own lines: ok, FAIL, "?  pkg [no test files]", panics.
			if !strings.HasPrefix(e.Output, "=== ") && !strings.HasPrefix(e.Output, "PASS") &&
				!strings.HasPrefix(e.Output, "testing: warning: no tests to run") {
				fmt.Fprint(s.out, e.Output)
			}
			return
		}
		s.buf[key] = append(s.buf[key], e.Output)
	case "pass":
		if e.Test != "" {
			s.passed++
			delete(s.buf, key)
		}
	case "fail":
		if e.Test == "" {
			s.bad = true
			return
		}
		s.failed++
		s.bad = true
		for _, l := range s.buf[key] {
			fmt.Fprint(s.out, l)
		}
		delete(s.buf, key)
	case "skip":
		if e.Test == "" {
			return
		}
		s.skipped++
		s.skips = append(s.skips, fmt.Sprintf("%s %s: %s", short(e.Package), e.Test, reason(s.buf[key])))
		delete(s.buf, key)
	}
}

// short drops the module path from a package path.
func short(pkg string) string {
	if i := strings.Index(pkg, "/dptrain/"); i >= 0 {
		return pkg[i+len("/dptrain/"):]
	}
	return pkg
}

// reason is the last line a skipped test logged before it stopped, its t.Skip message.
func reason(lines []string) string {
	for i := len(lines) - 1; i >= 0; i-- {
		l := strings.TrimSpace(lines[i])
		if l == "" || strings.HasPrefix(l, "---") || strings.HasPrefix(l, "===") {
			continue
		}
		if j := strings.Index(l, ".go:"); j >= 0 {
			if k := strings.Index(l[j:], ": "); k >= 0 {
				l = l[j+k+2:]
			}
		}
		return l
	}
	return "(no reason given)"
}

func main() {
	s := &summary{out: os.Stdout, buf: map[string][]string{}}
	sc := bufio.NewScanner(os.Stdin)
	sc.Buffer(make([]byte, 1<<20), 64<<20)
	for sc.Scan() {
		var e event
		if err := json.Unmarshal(sc.Bytes(), &e); err != nil || e.Action == "" {
			fmt.Println(sc.Text()) // not test2json: go test's own message
			continue
		}
		s.add(e)
	}
	if err := sc.Err(); err != nil {
		fmt.Fprintln(os.Stderr, "testsummary:", err)
		os.Exit(2)
	}
	// A test that never ended was running when its package's binary died (a panic, a
	// timeout): its output says where.
	keys := make([]string, 0, len(s.buf))
	for k := range s.buf {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		fmt.Printf("--- unfinished: %s\n", strings.ReplaceAll(k, "\x00", " "))
		for _, l := range s.buf[k] {
			fmt.Print(l)
		}
	}
	sort.Strings(s.skips)
	if len(s.skips) > 0 {
		fmt.Printf("skipped %d tests:\n", len(s.skips))
		for _, l := range s.skips {
			fmt.Println("  " + l)
		}
	}
	fmt.Printf("tests: %d passed, %d failed, %d skipped\n", s.passed, s.failed, s.skipped)
	if s.bad {
		os.Exit(1)
	}
}
