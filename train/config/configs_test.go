package config

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"gopkg.in/yaml.v3"

	"github.com/dptrain/dptrain/data"
)

// Every shipped config must parse and validate.
func TestShippedConfigs(t *testing.T) {
	files, err := filepath.Glob("../../configs/*.yaml")
	if err != nil || len(files) == 0 {
		t.Fatalf("no configs found: %v", err)
	}
	for _, f := range files {
		if _, err := LoadConfig(f, nil); err != nil {
			t.Errorf("%s: %v", f, err)
		}
	}
}

// configs/quickstart.yaml says it shows every key: with its commented-out keys uncommented, it
// must hold every key of the schema, and its dataset list must name only known datasets.
func TestQuickstartShowsEveryKey(t *testing.T) {
	b, err := os.ReadFile("../../configs/quickstart.yaml")
	if err != nil {
		t.Fatal(err)
	}
	uncomment := regexp.MustCompile(`(?m)^(\s*)# ?(\s*(?:- )?[a-z_0-9]+:)`)
	var root yaml.Node
	if err := yaml.Unmarshal(uncomment.ReplaceAll(b, []byte("$1$2")), &root); err != nil {
		t.Fatalf("quickstart.yaml with its keys uncommented does not parse: %v", err)
	}
	present := map[string]bool{}
	var walk func(n *yaml.Node, path string)
	walk = func(n *yaml.Node, path string) {
		switch n.Kind {
		case yaml.DocumentNode:
			walk(n.Content[0], path)
		case yaml.MappingNode:
			for i := 0; i+1 < len(n.Content); i += 2 {
				k := join(path, n.Content[i].Value)
				present[k] = true
				walk(n.Content[i+1], k)
			}
		case yaml.SequenceNode:
			present[path+"[]"] = true
			for _, e := range n.Content {
				walk(e, path+"[]")
			}
		}
	}
	walk(&root, "")
	for _, k := range Builtin().configKeys() {
		if !present[k] {
			t.Errorf("configs/quickstart.yaml does not show %s", k)
		}
	}
	m := regexp.MustCompile(`dataset: fashion-mnist\s+# (.*)`).FindSubmatch(b)
	if m == nil {
		t.Fatal("no dataset list in quickstart.yaml")
	}
	for _, name := range strings.Split(string(m[1]), " | ") {
		if _, err := data.Lookup(name); err != nil {
			t.Errorf("quickstart.yaml lists dataset %q, which dptrain does not know", name)
		}
	}
}
