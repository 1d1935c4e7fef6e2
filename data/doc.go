// Package data reads, locates, downloads and normalises datasets (MNIST and Fashion-MNIST IDX,
// CIFAR-10 binary, synthetic sets) into in-memory float32 arrays ready for batching, and
// provides the samplers that pick each step's batch. Every sampler declares its scheme so that
// the accountants can check it; every sampler takes an explicit random source.
//
// It knows nothing of models or privacy mathematics.
package data
