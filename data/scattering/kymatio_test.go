package scattering

import (
	"archive/zip"
	"encoding/binary"
	"fmt"
	"io"
	"math"
	"os"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// kymatioRefEnv names kymatio's own regression data for the 2-D scattering,
// tests/scattering2d/test_data_2d.npz in github.com/kymatio/kymatio (x of shape
// (2, 3, 32, 32) and its Scattering2D(J=4, L=8) coefficients Sx of shape (2, 3, 417, 2, 2)).
// The file is not part of this repository; point the variable at a copy to compare.
const kymatioRefEnv = "SCATTER_KYMATIO_NPZ"

// TestKymatioReference compares Apply with kymatio's stored output, to kymatio's own
// tolerance (numpy.allclose: |a − b| ≤ 1e-8 + 1e-5·|b|).
func TestKymatioReference(t *testing.T) {
	path := os.Getenv(kymatioRefEnv)
	if path == "" {
		t.Skipf("set %s to kymatio's tests/scattering2d/test_data_2d.npz to compare with kymatio", kymatioRefEnv)
	}
	arrays, err := readNPZ(path)
	if err != nil {
		t.Fatal(err)
	}
	x, sx, jv := arrays["x"], arrays["Sx"], arrays["J"]
	if x.shape == nil || sx.shape == nil || jv.shape == nil {
		t.Fatalf("%s lacks x, Sx or J", path)
	}
	J := int(jv.data[0])
	b, c, h, w := x.shape[0], x.shape[1], x.shape[2], x.shape[3]
	s, err := New(h, w, J, 8)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := s.OutShape(c), []int{c * sx.shape[2], sx.shape[3], sx.shape[4]}; fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("OutShape(%d) = %v, kymatio gives %v", c, got, want)
	}
	ws := s.NewWorkspace()
	in, out := c*h*w, len(sx.data)/b
	dst := make([]float32, out)
	src := make([]float32, in)
	var worst, maxAbs float64
	for i := range b {
		for k := range src {
			src[k] = float32(x.data[i*in+k])
		}
		s.Apply(dst, src, c, ws)
		for k, v := range dst {
			want := sx.data[i*out+k]
			d := math.Abs(float64(v) - want)
			maxAbs = max(maxAbs, math.Abs(want))
			if r := d / (1e-8 + 1e-5*math.Abs(want)); r > worst {
				worst = r
			}
		}
	}
	t.Logf("J=%d %dx%d: worst |diff|/(1e-8 + 1e-5|ref|) = %.3g (max |ref| %.3g)", J, h, w, worst, maxAbs)
	if worst > 1 {
		t.Errorf("output differs from kymatio's beyond numpy.allclose's tolerance (ratio %.3g)", worst)
	}
}

type npyArray struct {
	shape []int
	data  []float64
}

var npyShape = regexp.MustCompile(`'shape':\s*\(([^)]*)\)`)
var npyDescr = regexp.MustCompile(`'descr':\s*'([^']*)'`)

// readNPZ reads the little-endian float32, float64, int64 and bool arrays of a .npz file.
func readNPZ(path string) (map[string]npyArray, error) {
	zr, err := zip.OpenReader(path)
	if err != nil {
		return nil, err
	}
	defer zr.Close()
	out := map[string]npyArray{}
	for _, f := range zr.File {
		rc, err := f.Open()
		if err != nil {
			return nil, err
		}
		raw, err := io.ReadAll(rc)
		rc.Close()
		if err != nil {
			return nil, err
		}
		if len(raw) < 10 || string(raw[1:6]) != "NUMPY" {
			return nil, fmt.Errorf("%s: %s is not a .npy array", path, f.Name)
		}
		var hl, off int
		if raw[6] == 1 {
			hl, off = int(binary.LittleEndian.Uint16(raw[8:])), 10
		} else {
			hl, off = int(binary.LittleEndian.Uint32(raw[8:])), 12
		}
		header, body := string(raw[off:off+hl]), raw[off+hl:]
		var a npyArray
		a.shape = []int{}
		for _, p := range strings.Split(npyShape.FindStringSubmatch(header)[1], ",") {
			if p = strings.TrimSpace(p); p != "" {
				v, _ := strconv.Atoi(p)
				a.shape = append(a.shape, v)
			}
		}
		switch d := npyDescr.FindStringSubmatch(header)[1]; d {
		case "<f4":
			for i := 0; i+4 <= len(body); i += 4 {
				a.data = append(a.data, float64(math.Float32frombits(binary.LittleEndian.Uint32(body[i:]))))
			}
		case "<f8":
			for i := 0; i+8 <= len(body); i += 8 {
				a.data = append(a.data, math.Float64frombits(binary.LittleEndian.Uint64(body[i:])))
			}
		case "<i8":
			for i := 0; i+8 <= len(body); i += 8 {
				a.data = append(a.data, float64(int64(binary.LittleEndian.Uint64(body[i:]))))
			}
		case "|b1":
			for _, v := range body {
				a.data = append(a.data, float64(v))
			}
		default:
			return nil, fmt.Errorf("%s: %s has unsupported dtype %s", path, f.Name, d)
		}
		out[strings.TrimSuffix(f.Name, ".npy")] = a
	}
	return out, nil
}
