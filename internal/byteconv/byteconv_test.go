package byteconv

import "testing"

func TestHex4(t *testing.T) {
	for in, want := range map[string]int{"0000": 0, "00e9": 0xe9, "D83D": 0xd83d, "fFfF": 0xffff, "12": -1, "12g4": -1, "": -1, "abcdef": 0xabcd} {
		if got := Hex4([]byte(in)); got != want {
			t.Errorf("Hex4(%q) = %#x, want %#x", in, got, want)
		}
	}
}

func TestTrimOWS(t *testing.T) {
	for in, want := range map[string]string{" \ta b\t ": "a b", "": "", " \t": "", "x": "x"} {
		if got := string(TrimOWS([]byte(in))); got != want {
			t.Errorf("TrimOWS(%q) = %q, want %q", in, got, want)
		}
	}
}
