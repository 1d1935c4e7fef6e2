// Package data reads, locates, downloads and normalises datasets (MNIST and Fashion-MNIST IDX,
// CIFAR-10 binary, synthetic sets) into in-memory float32 arrays ready for batching, and
// provides the samplers that pick each step's batch. Every sampler declares its scheme so that
// the accountants can check it; every sampler takes an explicit random source.
//
// It knows nothing of models or privacy mathematics.
//
// # Datasets
//
// A Dataset holds a Train and a Test Split, each N rows of D float32 features (row-major;
// images in CHW order) with int32 labels. Readers scale pixels to [0, 1]; Standardize applies
// the published per-dataset mean/std and BoundNorm rescales every example to l2 norm ≤ R.
// Split.Gather copies a batch into caller-owned buffers without allocating.
//
// A Locator finds a dataset by name: in an explicit directory only, or else in the cache
// ($DPTRAIN_DATA, default os.UserCacheDir()/dptrain, one folder per dataset), then in
// /usr/share/datasets/NAME (Debian's dataset-fashion-mnist), then by downloading into the
// cache when allowed. A Downloader fetches from the canonical mirrors through NAME.part files,
// resumes with HTTP Range requests and checks each file's published SHA-256 before renaming
// it into place. Files that are truncated, corrupt or inconsistent give a *FileError naming
// the file, what was expected and what was found.
//
// # Samplers
//
// NewSampler builds a Sampler of one of the schemes (SchemePoisson, SchemePoissonWithRejection,
// SchemeWithoutReplacement, SchemeShuffled, SchemeShuffledOnce, SchemeFull), whose values equal
// accounting.Sampling's. Sampler is a concrete type, and BatchInfo, the declaration it returns
// with every batch, has only unexported fields: a declaration always comes from the sampler
// that drew the batch, and no program can write one.
package data
