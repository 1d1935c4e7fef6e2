package train

import (
	"os"
	"strings"
	"testing"
)

// docs/configuration.md shows configs/quickstart.yaml as shipped, from its name line on: the
// copy must be the file, or a reader learns keys and comments that the file no longer has.
func TestConfigurationDocShowsTheQuickstart(t *testing.T) {
	doc, err := os.ReadFile("../docs/configuration.md")
	if err != nil {
		t.Fatal(err)
	}
	file, err := os.ReadFile("../configs/quickstart.yaml")
	if err != nil {
		t.Fatal(err)
	}
	const start = "```yaml\nname: quickstart"
	i := strings.Index(string(doc), start)
	if i < 0 {
		t.Fatal("docs/configuration.md has no ```yaml block starting with name: quickstart")
	}
	block := string(doc[i+len("```yaml\n"):])
	block = block[:strings.Index(block, "```")]
	want := string(file[strings.Index(string(file), "name: quickstart"):])
	if block != want {
		dl, wl := strings.Split(block, "\n"), strings.Split(want, "\n")
		for k := 0; k < min(len(dl), len(wl)); k++ {
			if dl[k] != wl[k] {
				t.Fatalf("docs/configuration.md's copy of configs/quickstart.yaml differs at its line %d:\n doc:  %s\n file: %s\n(copy the file from its name line into the doc)", k+1, dl[k], wl[k])
			}
		}
		t.Fatalf("docs/configuration.md's copy has %d lines, configs/quickstart.yaml %d from its name line (copy the file into the doc)", len(dl), len(wl))
	}
}
