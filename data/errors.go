package data

import "fmt"

// FileError reports a dataset file that could not be used: which file, what was wrong with it
// (what was expected and what was found), and what to do about it.
type FileError struct {
	// Path is the file (or directory, or URL) at fault.
	Path string
	// Problem says what was expected and what was found.
	Problem string
	// Hint says what to do, e.g. "re-download it (dptrain data download --dataset mnist)".
	// It may be empty.
	Hint string
}

func (e *FileError) Error() string {
	if e.Hint == "" {
		return fmt.Sprintf("data: %s: %s", e.Path, e.Problem)
	}
	return fmt.Sprintf("data: %s: %s; %s", e.Path, e.Problem, e.Hint)
}

// redownloadHint is the advice attached to errors in files of a dataset the package knows how
// to download.
func redownloadHint(dataset string) string {
	if dataset == "" {
		return "re-download it"
	}
	return fmt.Sprintf("re-download it (dptrain data download --dataset %s)", dataset)
}

func fileErrorf(path, dataset, format string, args ...any) *FileError {
	return &FileError{Path: path, Problem: fmt.Sprintf(format, args...), Hint: redownloadHint(dataset)}
}
