package core

import "github.com/dptrain/dptrain/layer"

// OpKind is one step of a network's forward computation.
type OpKind int

const (
	OpDense   OpKind = iota // Layer: a dense layer
	OpConv                  // Layer: a conv2d layer
	OpGN                    // Layer: a GroupNorm layer
	OpMaxPool               // Kernel, Stride
	OpAvgPool               // Kernel, Stride
	OpFlatten
	OpAct     // Act
	OpGAP     // global average pool: (N, C, H, W) → (N, C)
	OpSave    // push the current tensor (a residual block's input)
	OpAddSave // pop the saved tensor, pass it through conv Proj / GroupNorm ProjGN if ≥ 0, add
)

// LayerKind is the kind of a layer with parameters; it decides how the ghost-clipping code
// computes its per-sample norms and clipped sums.
type LayerKind int

const (
	KindDense LayerKind = iota
	KindConv
	KindGN
)

// Net is a network laid out as the graph engine builds it: package models plans it and hands
// it to the engine (models.WithGraph).
type Net struct {
	Name    string
	Input   []int // one example's shape
	Classes int
	Chunk   int // the most samples one run processes
	// Params is the flat parameter vector, which the engine's parameter tensors alias.
	Params []float32
	Ops    []Op
	Layers []Layer
	// Linear lists the dense and conv layers a forward-only estimator sees (models.Network's
	// LinearLayers), and LinearIndex their positions in Layers.
	Linear      []layer.Linear
	LinearIndex []int
}

// Op is a planned forward step with its output shape (per sample).
type Op struct {
	Kind           OpKind
	Layer          int // parameter layer index (OpDense, OpConv, OpGN)
	Act            string
	Kernel, Stride int
	Proj, ProjGN   int // OpAddSave: shortcut projection layers, -1 for identity
	Out            []int
}

// Layer is a layer with parameters and its place in the flat parameter vector.
type Layer struct {
	Kind LayerKind
	Name string
	// dense and conv: the weight is D×K row-major at offset W (conv: D = C·KH·KW with index
	// c·KH·KW + r·KW + s, the order of gorgonia's Im2Col); bias at offset B, or B = -1.
	D, K, W, B int
	// conv geometry: input channels C, kernel KH×KW, stride, padding; output OH×OW.
	C, KH, KW, Stride, Pad, OH, OW int
	// GroupNorm over C channels of HW positions in Groups; scale at W, shift at B.
	Groups, HW int
	WS         bool // conv: weights standardised in the forward pass (ws.go)
}

// Rows is the number of rows a sample contributes to the layer's A and G matrices.
func (l *Layer) Rows() int {
	if l.Kind == KindConv {
		return l.OH * l.OW
	}
	return 1
}

// Geometry is the layer's layer.Geometry (dense and conv layers).
func (l *Layer) Geometry() layer.Geometry {
	return layer.Geometry{Rows: l.Rows(), In: l.D, Out: l.K, Bias: l.B >= 0}
}

// Prod is the number of elements of a tensor of shape s.
func Prod(s []int) int {
	p := 1
	for _, d := range s {
		p *= d
	}
	return p
}
