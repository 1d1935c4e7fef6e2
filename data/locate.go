package data

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
)

// Where a Locator found a dataset.
const (
	SourceDir       = "dir"       // the explicit directory
	SourceCache     = "cache"     // the cache directory
	SourceSystem    = "system"    // a system directory, e.g. Debian's /usr/share/datasets
	SourceDownload  = "download"  // downloaded just now
	SourceGenerated = "generated" // a synthetic set
)

// DefaultSystemRoots are the system directories searched for DATASET/ subdirectories: Debian's
// dataset-fashion-mnist package installs /usr/share/datasets/fashion-mnist.
var DefaultSystemRoots = []string{"/usr/share/datasets"}

// CacheEnv is the environment variable that overrides the cache directory.
const CacheEnv = "DPTRAIN_DATA"

// DefaultCacheDir returns $DPTRAIN_DATA if set, else os.UserCacheDir()/dptrain.
func DefaultCacheDir() (string, error) {
	if d := os.Getenv(CacheEnv); d != "" {
		return d, nil
	}
	d, err := os.UserCacheDir()
	if err != nil {
		return "", fmt.Errorf("data: no cache directory (%v); set %s or pass a directory", err, CacheEnv)
	}
	return filepath.Join(d, "dptrain"), nil
}

// Locator finds a dataset by name. With Dir set, Dir alone is searched (it is what the user
// asked for; a dataset found elsewhere would surprise), and a download goes there. Otherwise
// it searches the cache directory's DATASET/ folder, then each system root's DATASET/ folder,
// then downloads into the cache. A directory holding only a dataset's test files counts as
// holding the dataset: Load then returns a nil Train.
type Locator struct {
	// Dir is an explicit directory holding the dataset's files.
	Dir string
	// CacheDir is where downloads go (in a DATASET/ subdirectory); "" means DefaultCacheDir().
	CacheDir string
	// SystemRoots are searched for DATASET/ subdirectories; nil means DefaultSystemRoots, and
	// an empty non-nil slice searches none.
	SystemRoots []string
	// Download allows downloading a dataset that is not found.
	Download bool
	// Downloader fetches files when Download is set; nil means a Downloader with defaults.
	Downloader *Downloader
	// Seed seeds the synthetic datasets.
	Seed uint64
	// Classes lists the class folders of an image-folder dataset in label order (data.classes);
	// empty means the sorted class folders.
	Classes []string
}

// Location says where a dataset was found.
type Location struct {
	Spec Spec
	// Path is the directory (or, for CIFAR-10 and image folders, possibly the archive) holding
	// the files; empty for synthetic sets.
	Path string
	// Source is one of SourceDir, SourceCache, SourceSystem, SourceDownload, SourceGenerated.
	Source string
}

func (l Location) String() string {
	if l.Path == "" {
		return l.Source
	}
	return fmt.Sprintf("%s (%s)", l.Path, l.Source)
}

// Find returns where the dataset called name is, without reading it and without downloading.
// It returns an error wrapping os.ErrNotExist, which lists the places searched, when no
// candidate holds it.
func (l *Locator) Find(name string) (Location, error) {
	spec, err := Lookup(name)
	if err != nil {
		return Location{}, err
	}
	if spec.Format == FormatSynthetic {
		return Location{Spec: spec, Source: SourceGenerated}, nil
	}
	if spec.Name == ImageFolderName && l.Dir == "" {
		return Location{Spec: spec}, fmt.Errorf("data: %s reads your own images, and no place was given: %w; set data.path (in a config; --dir on the command line) to a directory or .tar.gz of <split>/<class>/<image> files", spec.Name, os.ErrNotExist)
	}
	cands, err := l.candidates(spec)
	if err != nil {
		return Location{}, err
	}
	var searched []string
	for _, c := range cands {
		if p, ok := holds(spec, c.Path); ok {
			c.Path = p
			return c, nil
		}
		searched = append(searched, c.Path)
	}
	return Location{Spec: spec}, fmt.Errorf("data: %s not found in %s: %w; download it (dptrain data download --dataset %s%s)",
		spec.Name, strings.Join(searched, ", "), os.ErrNotExist, spec.Name, l.dirFlag())
}

func (l *Locator) dirFlag() string {
	if l.Dir == "" {
		return ""
	}
	return " --dir " + l.Dir
}

// DownloadDir returns the directory a download of spec goes to: Dir, or CacheDir/NAME.
func (l *Locator) DownloadDir(spec Spec) (string, error) {
	if l.Dir != "" {
		return l.Dir, nil
	}
	cache, err := l.cacheDir()
	if err != nil {
		return "", err
	}
	return filepath.Join(cache, spec.Name), nil
}

func (l *Locator) cacheDir() (string, error) {
	if l.CacheDir != "" {
		return l.CacheDir, nil
	}
	return DefaultCacheDir()
}

func (l *Locator) candidates(spec Spec) ([]Location, error) {
	if l.Dir != "" {
		return []Location{{Spec: spec, Path: l.Dir, Source: SourceDir}}, nil
	}
	var out []Location
	cache, err := l.cacheDir()
	if err == nil {
		out = append(out, Location{Spec: spec, Path: filepath.Join(cache, spec.Name), Source: SourceCache})
	}
	roots := l.SystemRoots
	if roots == nil {
		roots = DefaultSystemRoots
	}
	for _, r := range roots {
		out = append(out, Location{Spec: spec, Path: filepath.Join(r, spec.Name), Source: SourceSystem})
	}
	if len(out) == 0 {
		return nil, err
	}
	return out, nil
}

// holds reports whether dir holds any file of spec, and the path to read it from.
func holds(spec Spec, dir string) (string, bool) {
	switch spec.Format {
	case FormatIDX:
		return dir, hasIDX(dir)
	case FormatCIFAR10:
		return cifarPath(dir)
	case FormatImageFolder:
		return imageFolderPath(spec, dir)
	}
	return "", false
}

// imageFolderPath finds an image folder at p: p itself when it is an archive; else, in the
// folder p, the dataset's archive, or its images in train/ and test/ folders (in p or in a
// folder of p named after the dataset). A user's own image folder is any folder p.
func imageFolderPath(spec Spec, p string) (string, bool) {
	st, err := os.Stat(p)
	switch {
	case err != nil:
		return "", false
	case st.Mode().IsRegular():
		return p, strings.HasSuffix(p, ".tar.gz") || strings.HasSuffix(p, ".tgz")
	case !st.IsDir():
		return "", false
	case spec.Name == ImageFolderName:
		return p, true
	}
	for _, f := range spec.Files {
		if st, err := os.Stat(filepath.Join(p, f.Name)); err == nil && st.Mode().IsRegular() {
			return filepath.Join(p, f.Name), true
		}
	}
	for _, d := range []string{p, filepath.Join(p, spec.Name)} {
		for _, split := range imageSplits {
			if st, err := os.Stat(filepath.Join(d, split)); err == nil && st.IsDir() {
				return p, true
			}
		}
	}
	return "", false
}

// cifarPath finds CIFAR-10 in dir: the batch files in dir itself, in its
// cifar-10-batches-bin folder, or the cifar-10-binary.tar.gz archive.
func cifarPath(dir string) (string, bool) {
	for _, d := range []string{dir, filepath.Join(dir, cifarFolder)} {
		for _, b := range append(cifarBatchNames(), cifarTestFile) {
			if st, err := os.Stat(filepath.Join(d, b)); err == nil && st.Mode().IsRegular() {
				return d, true
			}
		}
	}
	if strings.HasSuffix(dir, ".tar.gz") {
		if st, err := os.Stat(dir); err == nil && st.Mode().IsRegular() {
			return dir, true
		}
	}
	a := filepath.Join(dir, cifarArchive)
	if st, err := os.Stat(a); err == nil && st.Mode().IsRegular() {
		return a, true
	}
	return "", false
}

// Load finds, downloads if allowed and needed, and reads the dataset called name. Its Source
// records the path and how it was found, e.g. "/usr/share/datasets/fashion-mnist (system)".
func (l *Locator) Load(ctx context.Context, name string) (*Dataset, error) {
	loc, err := l.Find(name)
	if errors.Is(err, os.ErrNotExist) && l.Download {
		loc, err = l.fetch(ctx, loc.Spec)
	}
	if err != nil {
		return nil, err
	}
	return l.Read(loc)
}

func (l *Locator) fetch(ctx context.Context, spec Spec) (Location, error) {
	dir, err := l.DownloadDir(spec)
	if err != nil {
		return Location{}, err
	}
	dl := l.Downloader
	if dl == nil {
		dl = &Downloader{}
	}
	if err := dl.Fetch(ctx, spec, dir); err != nil {
		return Location{}, err
	}
	p, ok := holds(spec, dir)
	if !ok {
		return Location{}, fmt.Errorf("data: %s downloaded into %s but its files are not there", spec.Name, dir)
	}
	return Location{Spec: spec, Path: p, Source: SourceDownload}, nil
}

// Read reads the dataset at loc (from Find), or generates it from l.Seed if it is synthetic.
func (l *Locator) Read(loc Location) (*Dataset, error) {
	var (
		d   *Dataset
		err error
	)
	switch loc.Spec.Format {
	case FormatSynthetic:
		d, err = Synthetic(loc.Spec.Name, l.Seed)
		if err != nil {
			return nil, err
		}
		return d, nil
	case FormatIDX:
		d, err = ReadIDXDir(loc.Path, loc.Spec)
	case FormatCIFAR10:
		if strings.HasSuffix(loc.Path, ".tar.gz") {
			d, err = ReadCIFAR10Archive(loc.Path)
		} else {
			d, err = ReadCIFAR10Dir(loc.Path)
		}
	case FormatImageFolder:
		return l.readImages(loc)
	default:
		return nil, fmt.Errorf("data: %s has unknown format %q", loc.Spec.Name, loc.Spec.Format)
	}
	if err != nil {
		return nil, err
	}
	d.Source = loc.String()
	return d, nil
}

// readImages reads the image folder at loc, an archive through the cache of decoded images in
// the cache directory's DATASET/ folder, and checks it against the dataset's spec.
func (l *Locator) readImages(loc Location) (*Dataset, error) {
	spec := loc.Spec
	classes := spec.ClassNames
	if spec.Name == ImageFolderName {
		classes = l.Classes
	} else if len(l.Classes) > 0 && !slices.Equal(l.Classes, classes) {
		return nil, fmt.Errorf("data: %s has the classes %v in that order; classes %v are for image-folder datasets: leave data.classes out", spec.Name, classes, l.Classes)
	}
	var (
		set    *imageSet
		err    error
		cached bool
	)
	if st, serr := os.Stat(loc.Path); serr == nil && st.Mode().IsRegular() {
		var dir, want string
		if cache, cerr := l.cacheDir(); cerr == nil {
			dir = filepath.Join(cache, spec.Name)
		}
		if len(spec.Files) > 0 {
			want = spec.Files[0].SHA256
		}
		set, cached, _, err = readImageArchiveCached(loc.Path, dir, want, classes)
	} else {
		set, err = readImageSet(loc.Path, classes)
	}
	if err != nil {
		return nil, err
	}
	if spec.Shape != nil && !slices.Equal(set.shape[:], spec.Shape) {
		return nil, &FileError{Path: loc.Path, Problem: fmt.Sprintf("images of shape %v (channels, height, width), but %s's are %v", set.shape, spec.Name, spec.Shape), Hint: "it holds another dataset; point data.path at " + spec.Name + "'s files"}
	}
	source := loc.String()
	if cached {
		source += ", decoded images from the cache"
	}
	return set.dataset(spec.Name, source), nil
}
