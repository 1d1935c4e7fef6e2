// Package config is a training run's configuration: the schema (Config and its sections),
// strict YAML reading with --set overrides (LoadConfig, ParseConfig), defaults and validation,
// and the canonical form whose hash a checkpoint keeps to decide what a resume may change.
//
// # Algorithms
//
// An algorithm (optimizer.algorithm) is one algorithm.Algorithm in a registry (Algorithms);
// Builtin returns the shipped ones (algorithm/builtin: dp-sgd, sgd, dp-sgld, modelmix, dp-ulr,
// dp-mbcd, mbcd), and the registry decodes and checks each algorithm's own section under
// optimizer. Nothing else in config, train or cmd names an algorithm. Each is one directory
// under algorithm/ holding its step, its declarations, its section, its checks and its
// registration (see package algorithm); adding one is a new directory and one line in
// algorithm/builtin, or one Register call on a registry of one's own
// (algorithm/internal/toyalg).
package config
