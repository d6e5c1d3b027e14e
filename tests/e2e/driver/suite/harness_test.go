package suite

import (
	"os"
	"path/filepath"
	"regexp"
	"testing"
)

// Every test of this suite belongs to one of the groups tests/CMakeLists.txt registers with CTest,
// so none is silently left out of `ctest -L e2e` (or, for benchmarks, `ctest -L perf`).
func TestHarnessEveryTestInACTestGroup(t *testing.T) {
	cmake, err := os.ReadFile(filepath.Join(env.RepoRoot, "tests", "CMakeLists.txt"))
	if err != nil {
		t.Fatal(err)
	}
	var groups []*regexp.Regexp
	for _, m := range regexp.MustCompile(`"([a-z]+):(\^[^"]+)"`).FindAllStringSubmatch(string(cmake), -1) {
		groups = append(groups, regexp.MustCompile(m[2]))
	}
	if len(groups) == 0 {
		t.Fatal("no e2e groups in tests/CMakeLists.txt")
	}
	files, _ := filepath.Glob(filepath.Join(env.RepoRoot, "tests", "e2e", "driver", "suite", "*_test.go"))
	found := 0
	for _, f := range files {
		src, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range regexp.MustCompile(`(?m)^func (Test\w+)\(t \*testing\.T\)`).FindAllStringSubmatch(string(src), -1) {
			found++
			matched := 0
			for _, g := range groups {
				if g.MatchString(m[1]) {
					matched++
				}
			}
			if matched != 1 {
				t.Errorf("%s (%s) is in %d CTest groups, want exactly 1", m[1], filepath.Base(f), matched)
			}
		}
	}
	if found < 10 {
		t.Errorf("found only %d tests", found)
	}
}
