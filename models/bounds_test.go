package models

import (
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"strings"
	"testing"
)

// craft builds a parameter file with a valid checksum around spec, declaring count parameters
// and holding have of them.
func craft(spec string, count uint64, have int) []byte {
	var b bytes.Buffer
	b.WriteString(paramMagic)
	binary.Write(&b, binary.LittleEndian, uint32(paramVersion))
	binary.Write(&b, binary.LittleEndian, uint32(len(spec)))
	b.WriteString(spec)
	binary.Write(&b, binary.LittleEndian, count)
	b.Write(make([]byte, 4*have))
	sum := sha256.Sum256(b.Bytes())
	b.Write(sum[:])
	return b.Bytes()
}

// Crafted files that promise huge networks are refused from their sizes, before any memory
// is allocated for them (a 110-byte file once made eval run out of memory).
func TestReadParamsBoundsSizesByTheFile(t *testing.T) {
	for _, tc := range []struct {
		name string
		file []byte
		want string
	}{
		{"huge hidden layer", craft(`{"kind":"mlp","hidden":[100000000]}`, 0, 0), "parameters"},
		{"huge count, few bytes", craft(`{"kind":"logreg"}`, 1<<61, 0), "promises"},
		{"overflowing widths", craft(`{"kind":"mlp","input":[4611686018427387904],"hidden":[4]}`, 0, 0), "exceeds"},
		{"huge conv input", craft(`{"kind":"cnn","input":[1,100000,100000],"classes":2,"layers":[{"type":"conv2d","out":1,"kernel":1},{"type":"flatten"},{"type":"dense","out":2}]}`, 0, 0), "exceeds"},
		{"spec longer than the file", craft(`{"kind":"logreg"}`, 0, 0)[:20], "truncated"},
		{"count not matching the spec", craft(`{"kind":"logreg","input":[3],"classes":2}`, 2, 2), "needs 8"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := ReadParams(bytes.NewReader(tc.file))
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %v, want it to mention %q", err, tc.want)
			}
		})
	}
}
