// Package algorithm is the registry of private training algorithms: what an algorithm is to
// the config, the trainer and `dptrain account compare --config` (Algorithm), what its
// Prepare may read (Env, Config, and Model, the public facts of the model's architecture) and
// what it returns (Plan), and the registry itself (Algorithms), with the optimizer section of
// the config (OptimizerConfig) and the helpers the algorithms share (UpdateRule, Positive,
// ClipNormRun, UpdateKeys). The registry is plain types and functions: it reads no YAML
// (package train decodes the config, and each algorithm's section into the value NewSection
// returns) and knows no model engine (the trainer fills Model from the network it built), so
// it imports only accounting, optim and internal/kernels, and the root package dptrain, which
// runs DP-SGD through it, stays free of gorgonia and YAML.
//
// # One directory per algorithm
//
// Each built-in algorithm is one directory below this one, holding all of it: its step (a
// type implementing optim.Optimizer, optim.Declarer and optim.StepDeclarer, optim.Checkpointer
// and, if it draws its own initial iterate, optim.Initializer), the records it declares, its
// state for resuming, its config section, its checks and its registration, a function
// returning its Algorithm:
//
//	dpsgd     DP-SGD (Abadi et al., "Deep Learning with Differential Privacy", Algorithm 1)
//	          and the non-private baseline sgd through the same code
//	dpsgld    DP-SGLD (Ryffel, Bach & Pointcheval, "Differential Privacy Guarantees for
//	          Stochastic Gradient Langevin Dynamics", Algorithm 1)
//	modelmix  DP-SGD with ModelMix (Xiao, Wan & Devadas, "Differentially Private Deep
//	          Learning with ModelMix", Algorithm 1)
//	dpulr     DP-ULR (Feng et al., "Forward Learning with Differential Privacy", Algorithm 1)
//	dpmbcd    DP-MBCD (Chen & Liu, "Hidden State Differential Private Mini-Batch Block
//	          Coordinate Descent", Algorithm 4) and its non-private baseline mbcd
//
// Package builtin registers them, one line each. Adding an algorithm is one new directory and
// one line there (or one Register call on a registry of one's own, as the toy algorithm of
// algorithm/internal/toyalg does in its test). What the steps share (noise, clipping,
// schedules, update rules, batch declarations and the common state entries) stays in optim;
// the accountants are in accounting. The dependencies point down: an algorithm's package
// imports algorithm, optim, accounting and light packages (data, internal/kernels), DP-MBCD's
// also models/lifted for its lifted network, never train; its Prepare reads the model's facts
// (Env.Model), not the model.
package algorithm
