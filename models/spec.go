package models

import (
	"fmt"
	"slices"
	"strings"
)

// Spec describes an architecture; a YAML or JSON config maps onto it directly.
//
// Kind selects the family: "logreg" (softmax regression), "mlp" (Hidden widths, Activation),
// "cnn" (an explicit Layers list) or a preset name (see Presets). Input and Classes default to
// the preset's (or, for logreg and mlp, to MNIST's [784] and 10) when zero.
type Spec struct {
	Kind       string      `json:"kind" yaml:"kind"`
	Input      []int       `json:"input,omitempty" yaml:"input,omitempty"`
	Classes    int         `json:"classes,omitempty" yaml:"classes,omitempty"`
	Hidden     []int       `json:"hidden,omitempty" yaml:"hidden,omitempty"`
	Activation string      `json:"activation,omitempty" yaml:"activation,omitempty"` // relu | tanh | gelu
	NoBias     bool        `json:"no_bias,omitempty" yaml:"no_bias,omitempty"`       // logreg/mlp: drop biases
	Layers     []LayerSpec `json:"layers,omitempty" yaml:"layers,omitempty"`
	// Chunk is the largest number of samples one run processes (0: the kind's default).
	// Larger batches are processed in chunks, which bounds memory independently of batch size.
	Chunk int `json:"chunk,omitempty" yaml:"chunk,omitempty"`
	// Engine selects how training and evaluation passes run: "direct" (the direct executor,
	// direct.go: NHWC layout, every core, no graph), "graph" (the gorgonia graph of package
	// models/graph), or "" / "auto": dnnl for a network with conv layers in a binary built with
	// the dnnl tag, direct otherwise, graph for a network with a gelu layer; "dnnl": the direct
	// executor with its convolutions on oneDNN (a binary built with the dnnl tag; dnnl.go).
	// Results agree to float32 rounding. The graph runs only networks built with its engine
	// (graph.New, graph.Load): New of this package refuses engine graph and gelu layers.
	Engine string `json:"engine,omitempty" yaml:"engine,omitempty"`
	// WeightStandardization standardises the weights of every conv layer (conv2d layers and the
	// convolutions inside resblocks) in the forward pass, per output channel over its fan-in:
	// Ŵ_o = (W_o − mean(W_o))/√(var(W_o) + 1e-5) (Qiao et al., "Micro-Batch Training with
	// Batch-Channel Normalization and Weight Standardization"; De et al. 2022 use it with
	// GroupNorm). It reparametrises the model and leaves per-example clipping and the privacy
	// analysis unchanged (see models/internal/core/ws.go). A spec without conv layers is
	// refused. Both engines run it.
	WeightStandardization bool `json:"weight_standardization,omitempty" yaml:"weight_standardization,omitempty"`
	// Preprocessing records how the inputs were prepared (dataset, normalisation, features),
	// as the trainer's config keys and values, so that evaluation can prepare its inputs the
	// same way. This package stores it with the parameters and never reads it.
	Preprocessing map[string]string `json:"preprocessing,omitempty" yaml:"-"`
}

// LayerSpec is one layer of a "cnn" Spec.
//
// Type is one of:
//   - conv2d: Out channels, Kernel×Kernel, Stride (default 1), Padding (default 0), NoBias;
//   - maxpool, avgpool: Kernel×Kernel, Stride (default Kernel);
//   - flatten;
//   - dense: Out units, NoBias (a 4-D input is flattened first);
//   - relu, tanh, gelu;
//   - groupnorm: Groups (must divide the channels); affine scale and shift per channel;
//   - resblock: a ResNet basic block, conv3×3(Stride)–GN–relu–conv3×3–GN plus a shortcut
//     (identity, or conv1×1(Stride)–GN when the shape changes), then relu; Out channels, Groups;
//   - globalavgpool: mean over the spatial positions, giving (N, C).
//
// BatchNorm is deliberately absent: it mixes the samples of a batch, so a sample's gradient
// would depend on the others and per-sample clipping would not bound its sensitivity.
type LayerSpec struct {
	Type    string `json:"type" yaml:"type"`
	Out     int    `json:"out,omitempty" yaml:"out,omitempty"`
	Kernel  int    `json:"kernel,omitempty" yaml:"kernel,omitempty"`
	Stride  int    `json:"stride,omitempty" yaml:"stride,omitempty"`
	Padding int    `json:"padding,omitempty" yaml:"padding,omitempty"`
	Groups  int    `json:"groups,omitempty" yaml:"groups,omitempty"`
	NoBias  bool   `json:"no_bias,omitempty" yaml:"no_bias,omitempty"`
}

// Presets lists the named architectures Spec.Kind accepts.
func Presets() []string {
	return []string{"cnn-tramer-boneh", "lenet5", "mlp-784-128-64-32-10", "resnet20-gn"}
}

// resolved is a Spec expanded to an explicit layer list with its shapes filled in.
type resolved struct {
	name    string
	input   []int
	classes int
	layers  []LayerSpec
	chunk   int
	engine  string // "direct", "dnnl", "graph" or "auto"
	ws      bool   // standardise conv weights (Spec.WeightStandardization)
}

func preset(name string) (Spec, bool) {
	switch name {
	case "cnn-tramer-boneh":
		// Tramèr & Boneh (2021), "Differentially private learning needs better features",
		// Table 9: the end-to-end MNIST CNN.
		return Spec{Kind: "cnn", Input: []int{1, 28, 28}, Classes: 10, Layers: []LayerSpec{
			{Type: "conv2d", Out: 16, Kernel: 8, Stride: 2, Padding: 3}, {Type: "tanh"},
			{Type: "maxpool", Kernel: 2, Stride: 1},
			{Type: "conv2d", Out: 32, Kernel: 4, Stride: 2}, {Type: "tanh"},
			{Type: "maxpool", Kernel: 2, Stride: 1},
			{Type: "flatten"}, {Type: "dense", Out: 32}, {Type: "tanh"}, {Type: "dense", Out: 10},
		}}, true
	case "scatternet-cnn-fmnist":
		// Tramèr & Boneh (2021), Table 8: the CNN on ScatterNet features of (Fashion-)MNIST
		// (81 channels of 7×7 for J = 2, L = 8; data.features in the config).
		return Spec{Kind: "cnn", Input: []int{81, 7, 7}, Classes: 10, Layers: []LayerSpec{
			{Type: "conv2d", Out: 16, Kernel: 3, Stride: 2, Padding: 1}, {Type: "tanh"},
			{Type: "conv2d", Out: 32, Kernel: 3, Stride: 1, Padding: 1}, {Type: "tanh"},
			{Type: "flatten"}, {Type: "dense", Out: 32}, {Type: "tanh"}, {Type: "dense", Out: 10},
		}}, true
	case "lenet5":
		// LeCun et al. (1998) LeNet-5 on 28×28 inputs (padding 2 recovers the 32×32 geometry),
		// with tanh and average pooling as in the original.
		return Spec{Kind: "cnn", Input: []int{1, 28, 28}, Classes: 10, Layers: []LayerSpec{
			{Type: "conv2d", Out: 6, Kernel: 5, Padding: 2}, {Type: "tanh"},
			{Type: "avgpool", Kernel: 2, Stride: 2},
			{Type: "conv2d", Out: 16, Kernel: 5}, {Type: "tanh"},
			{Type: "avgpool", Kernel: 2, Stride: 2},
			{Type: "flatten"}, {Type: "dense", Out: 120}, {Type: "tanh"},
			{Type: "dense", Out: 84}, {Type: "tanh"}, {Type: "dense", Out: 10},
		}}, true
	case "mlp-784-128-64-32-10":
		return Spec{Kind: "mlp", Input: []int{784}, Classes: 10, Hidden: []int{128, 64, 32}, Activation: "relu"}, true
	case "resnet20-gn":
		// He et al. (2016) ResNet-20 for CIFAR-10 (3 stages of 3 basic blocks, 16/32/64
		// channels) with GroupNorm in place of BatchNorm, as in DP training practice
		// (De et al. 2022); projection shortcuts (1×1 conv) where the shape changes.
		layers := []LayerSpec{
			{Type: "conv2d", Out: 16, Kernel: 3, Padding: 1, NoBias: true},
			{Type: "groupnorm", Groups: 4}, {Type: "relu"},
		}
		for stage, ch := range []int{16, 32, 64} {
			for blk := 0; blk < 3; blk++ {
				stride := 1
				if stage > 0 && blk == 0 {
					stride = 2
				}
				layers = append(layers, LayerSpec{Type: "resblock", Out: ch, Stride: stride, Groups: 4})
			}
		}
		layers = append(layers, LayerSpec{Type: "globalavgpool"}, LayerSpec{Type: "dense", Out: 10})
		return Spec{Kind: "cnn", Input: []int{3, 32, 32}, Classes: 10, Layers: layers, Chunk: 32}, true
	}
	return Spec{}, false
}

// resolve expands s into an explicit layer list and checks it.
func (s Spec) resolve() (resolved, error) {
	name := s.Kind
	if p, ok := preset(s.Kind); ok {
		if s.Input == nil {
			s.Input = p.Input
		}
		if s.Classes == 0 {
			s.Classes = p.Classes
		}
		if s.Chunk == 0 {
			s.Chunk = p.Chunk
		}
		s.Kind, s.Hidden, s.Activation, s.Layers = p.Kind, p.Hidden, p.Activation, p.Layers
	}
	if s.Kind != "logreg" && s.Kind != "mlp" && s.Kind != "cnn" {
		return resolved{}, fmt.Errorf("models: unknown model kind %q: use logreg, mlp, cnn or a preset (%s)",
			s.Kind, strings.Join(Presets(), ", "))
	}
	if s.Input == nil && (s.Kind == "logreg" || s.Kind == "mlp") {
		s.Input = []int{784}
	}
	if s.Classes == 0 && (s.Kind == "logreg" || s.Kind == "mlp") {
		s.Classes = 10
	}
	if len(s.Input) == 0 {
		return resolved{}, fmt.Errorf("models: spec %q has no input shape: set input, e.g. [1, 28, 28]", name)
	}
	for _, d := range s.Input {
		if d <= 0 {
			return resolved{}, fmt.Errorf("models: input shape %v has a non-positive dimension", s.Input)
		}
	}
	if s.Classes < 2 {
		return resolved{}, fmt.Errorf("models: spec %q has %d classes; need at least 2", name, s.Classes)
	}
	r := resolved{name: name, input: append([]int(nil), s.Input...), classes: s.Classes, chunk: s.Chunk,
		ws: s.WeightStandardization}
	if r.chunk == 0 {
		r.chunk = 256
	}
	if r.chunk < 0 {
		return resolved{}, fmt.Errorf("models: chunk %d is negative", r.chunk)
	}
	switch r.engine = s.Engine; r.engine {
	case "":
		r.engine = "auto"
	case "auto", "direct", "graph", "dnnl":
	default:
		return resolved{}, fmt.Errorf("models: engine %q unknown: use auto, direct, dnnl or graph", s.Engine)
	}
	switch s.Kind {
	case "logreg":
		r.layers = []LayerSpec{{Type: "dense", Out: s.Classes, NoBias: s.NoBias}}
	case "mlp":
		act := s.Activation
		if act == "" {
			act = "relu"
		}
		if !isActivation(act) {
			return resolved{}, fmt.Errorf("models: activation %q unknown: use relu, tanh or gelu", act)
		}
		for _, h := range s.Hidden {
			r.layers = append(r.layers, LayerSpec{Type: "dense", Out: h, NoBias: s.NoBias}, LayerSpec{Type: act})
		}
		r.layers = append(r.layers, LayerSpec{Type: "dense", Out: s.Classes, NoBias: s.NoBias})
	case "cnn":
		if len(s.Layers) == 0 {
			return resolved{}, fmt.Errorf("models: cnn spec %q has no layers", name)
		}
		r.layers = append([]LayerSpec(nil), s.Layers...)
	default:
		return resolved{}, fmt.Errorf("models: unknown model kind %q: use logreg, mlp, cnn or a preset (%s)",
			s.Kind, strings.Join(Presets(), ", "))
	}
	for i := range r.layers {
		l := &r.layers[i]
		switch l.Type {
		case "conv2d", "maxpool", "avgpool":
			if l.Kernel <= 0 {
				return resolved{}, fmt.Errorf("models: layer %d (%s) needs kernel > 0", i, l.Type)
			}
			if l.Stride == 0 {
				l.Stride = 1
				if l.Type != "conv2d" {
					l.Stride = l.Kernel
				}
			}
			if l.Stride < 0 || l.Padding < 0 {
				return resolved{}, fmt.Errorf("models: layer %d (%s) has negative stride or padding", i, l.Type)
			}
			if l.Type == "conv2d" && l.Out <= 0 {
				return resolved{}, fmt.Errorf("models: layer %d (conv2d) needs out > 0 channels", i)
			}
		case "dense":
			if l.Out <= 0 {
				return resolved{}, fmt.Errorf("models: layer %d (dense) needs out > 0 units", i)
			}
		case "groupnorm":
			if l.Groups <= 0 {
				return resolved{}, fmt.Errorf("models: layer %d (groupnorm) needs groups > 0", i)
			}
		case "resblock":
			if l.Out <= 0 || l.Groups <= 0 {
				return resolved{}, fmt.Errorf("models: layer %d (resblock) needs out > 0 and groups > 0", i)
			}
			if l.Stride == 0 {
				l.Stride = 1
			}
		case "flatten", "relu", "tanh", "gelu", "globalavgpool", "save", "add":
		default:
			return resolved{}, fmt.Errorf("models: layer %d has unknown type %q", i, l.Type)
		}
	}
	if r.ws && !slices.ContainsFunc(r.layers, func(l LayerSpec) bool { return l.Type == "conv2d" || l.Type == "resblock" }) {
		return resolved{}, fmt.Errorf("models: weight_standardization standardises conv layers, and %s has none: remove the key or use a model with conv2d layers", name)
	}
	last := r.layers[len(r.layers)-1]
	if last.Type != "dense" || last.Out != r.classes {
		return resolved{}, fmt.Errorf("models: the last layer must be dense with out = classes (%d), got %s/%d",
			r.classes, last.Type, last.Out)
	}
	return r, nil
}

func isActivation(t string) bool { return t == "relu" || t == "tanh" || t == "gelu" }
