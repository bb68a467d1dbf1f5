//go:build !race

package config

import (
	"os"
	"strings"
	"testing"

	"github.com/goccy/go-yaml/lexer"
)

// TestNestingCheckAllocatesNothing: the depth check costs no garbage on top
// of the tokens the parser needs anyway, on a normal file or a deep one.
func TestNestingCheckAllocatesNothing(t *testing.T) {
	example, err := os.ReadFile("../config.example.yaml")
	if err != nil {
		t.Fatal(err)
	}
	for name, src := range map[string]string{
		"example": string(example),
		"deep":    "targets: " + strings.Repeat("[", 100),
	} {
		tokens := lexer.Tokenize(src)
		if a := testing.AllocsPerRun(20, func() { tooDeep(tokens) }); a != 0 {
			t.Errorf("%s: %v allocations per check; want 0", name, a)
		}
	}
}
