package upstream

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
)

// testKey holds '+' and '/', which JSON encoders write as \u002B / \u002b
// and \/ or \u002F.
const testKey = "sk-ant-api03-Zm9v+YmFy/baz=0123456789"

// escapeKey writes key with byte i escaped as \u00XX when mask has bit
// i%64 (upper-case hex when upper), '/' as \/ when slash.
func escapeKey(key string, mask uint64, upper, slash bool) string {
	var b strings.Builder
	for i := range len(key) {
		c := key[i]
		switch {
		case mask&(1<<(i%64)) == 0:
			b.WriteByte(c)
		case c == '/' && slash:
			b.WriteString(`\/`)
		case upper:
			fmt.Fprintf(&b, `\u%04X`, c)
		default:
			fmt.Fprintf(&b, `\u%04x`, c)
		}
	}
	return b.String()
}

func TestRedactEscapedCredential(t *testing.T) {
	tg := &Target{secrets: secretsOf(&Endpoint{APIKey: testKey})}
	all := ^uint64(0)
	for _, tc := range []struct{ name, in, want string }{
		{"literal", `{"m":"bad key ` + testKey + `"}`, `{"m":"bad key [REDACTED]"}`},
		{"all escaped lower hex", `{"m":"` + escapeKey(testKey, all, false, false) + `"}`, `{"m":"[REDACTED]"}`},
		{"all escaped upper hex", `{"m":"` + escapeKey(testKey, all, true, false) + `"}`, `{"m":"[REDACTED]"}`},
		{"mixed", `{"m":"k=` + escapeKey(testKey, 0xA5A5A5A5A5, true, false) + `."}`, `{"m":"k=[REDACTED]."}`},
		{"only + escaped", `"` + strings.Replace(testKey, "+", `\u002b`, 1) + `"`, `"[REDACTED]"`},
		{"slash as \\/", `"` + strings.Replace(testKey, "/", `\/`, 1) + `"`, `"[REDACTED]"`},
		{"slash as \\u002F", `"` + strings.Replace(testKey, "/", `\u002F`, 1) + `"`, `"[REDACTED]"`},
		{"first byte escaped", `"` + `\u0073` + testKey[1:] + `"`, `"[REDACTED]"`},
		{"at the very end, last byte escaped", `x ` + testKey[:len(testKey)-1] + `\u0039`, `x [REDACTED]`},
		{"at the very end, literal", `x ` + testKey, `x [REDACTED]`},
		{"adjacent", testKey + escapeKey(testKey, all, false, true) + testKey, `[REDACTED][REDACTED][REDACTED]`},
		{"among unrelated escapes", `"caf\u00e9\n` + escapeKey(testKey, 0xF0F0F0, false, true) + `\n\u00e9\""`, `"caf\u00e9\n[REDACTED]\n\u00e9\""`},
		{"escaped inside another escape's tail", `\u00e9` + escapeKey(testKey, 1, false, false), `\u00e9[REDACTED]`},

		// Near misses: none decodes to the key.
		{"wrong escaped byte", `"` + strings.Replace(testKey, "+", `\u002c`, 1) + `"`, ``},
		{"last byte differs", `"` + escapeKey(testKey[:len(testKey)-1]+"8", all, false, false) + `"`, ``},
		{"truncated at the end", `"` + escapeKey(testKey, all, false, false)[:6*len(testKey)-1], ``},
		{"bad hex digit", `"` + strings.Replace(testKey, "+", `\u002G`, 1) + `"`, ``},
		{"upper-case U is no escape", `"` + strings.Replace(testKey, "+", `\U002B`, 1) + `"`, ``},
		{"escaped backslash, then text", `"` + strings.Replace(testKey, "+", `\\u002B`, 1) + `"`, ``},
		{"prefix only", `"` + testKey[:20] + `\u0000` + testKey[20:] + `"`, ``},
	} {
		t.Run(tc.name, func(t *testing.T) {
			want := tc.want
			if want == "" {
				want = tc.in
			}
			if got := tg.redact([]byte(tc.in)); string(got) != want {
				t.Errorf("redact(%s)\n got %s\nwant %s", tc.in, got, want)
			}
		})
	}
}

// Every credential of a target, in any order, overlapping or not: the
// earliest occurrence wins (the longest of those starting together), and
// an unchanged input comes back as the same slice.
func TestRedactSeveralCredentials(t *testing.T) {
	tg := &Target{secrets: secretsOf(&Endpoint{
		AWSAccessKeyID:     "AKIAIOSFODNN7EXAMPLE",
		AWSSecretAccessKey: "AKIAIOSFODNN7EXAMPLE/wJalrXUtnFEMI", // the key id as its prefix
		AWSSessionToken:    "short",                              // under minSecretLen: not a secret
	})}
	if len(tg.secrets) != 2 {
		t.Fatalf("%d secrets, want 2 (a 5-byte value is none)", len(tg.secrets))
	}
	for _, tc := range []struct{ in, want string }{
		{`id AKIAIOSFODNN7EXAMPLE secret AKIAIOSFODNN7EXAMPLE\/wJalrXUtnFEMI short`, `id [REDACTED] secret [REDACTED] short`},
		{`AKIAIOSFODNN7EXAMPLE\u002fwJalrXUtnFEMIAKIAIOSFODNN7EXAMPLE`, `[REDACTED][REDACTED]`},
		{`AKIAIOSFODNN7EXAMPL\u0045/wJalrXUtnFEMI`, `[REDACTED]`},
		{`AKIAIOSFODNN7EXAMPL`, ``},
	} {
		want := tc.want
		if want == "" {
			want = tc.in
		}
		if got := tg.redact([]byte(tc.in)); string(got) != want {
			t.Errorf("redact(%s)\n got %s\nwant %s", tc.in, got, want)
		}
	}
	for _, in := range []string{`no key here`, `no key \u0041KIA here\/`} {
		b := []byte(in)
		if got := tg.redact(b); &got[0] != &b[0] {
			t.Errorf("redact(%s) copied an unchanged input", in)
		}
	}
	if got := (&Target{}).redact(nil); got != nil {
		t.Errorf("no secrets: %q", got)
	}
}

// A credential that is not ASCII matches its \u escapes too, a character
// beyond the BMP as a surrogate pair.
func TestRedactNonASCIICredential(t *testing.T) {
	key := "cl\u00e9-secr\u00e8te-\U0001F600-42"
	tg := &Target{secrets: secretsOf(&Endpoint{APIKey: key})}
	for _, in := range []string{
		`"` + key + `"`,
		`"cl\u00e9-secr\u00E8te-\ud83d\ude00-42"`,
		`"cl\u00e9-secr` + "\u00e8" + `te-\uD83D\uDE00\u002D42"`,
	} {
		if got := tg.redact([]byte(in)); string(got) != `"[REDACTED]"` {
			t.Errorf("redact(%s) = %s", in, got)
		}
	}
	if in := `"cl\u00e9-secr\u00e8te-\ud83d-42"`; string(tg.redact([]byte(in))) != in {
		t.Errorf("an unpaired surrogate matched the pair")
	}
}

// FuzzRedact: with the target's credentials written anywhere in any
// bytes, literally or with any of their bytes escaped, no JSON string in
// redact's output (one starting at any '"' that encoding/json decodes)
// holds a credential, nor do the output's raw bytes.
func FuzzRedact(f *testing.F) {
	keys := []string{testKey, "AKIAIOSFODNN7EXAMPLE", "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"}
	tg := &Target{secrets: secretsOf(&Endpoint{APIKey: keys[0], AWSAccessKeyID: keys[1], AWSSecretAccessKey: keys[2]})}
	f.Add([]byte(`{"error":{"message":"bad key "}}`), uint8(0), uint16(28), uint64(0), uint8(0))
	f.Add([]byte(`{"error":{"message":"caf\u00e9\n\\"}}`), uint8(1), uint16(31), ^uint64(0), uint8(1))
	f.Add([]byte(`data: {"m":"\"\/\u002B"}`), uint8(2), uint16(12), uint64(0x5555), uint8(3))
	f.Add([]byte(`"\`), uint8(0), uint16(2), uint64(1), uint8(2))
	f.Fuzz(func(t *testing.T, data []byte, which uint8, at uint16, mask uint64, style uint8) {
		key := keys[int(which)%len(keys)]
		pos := int(at) % (len(data) + 1)
		in := append(append(append([]byte(nil), data[:pos]...), escapeKey(key, mask, style&1 != 0, style&2 != 0)...), data[pos:]...)
		out := tg.redact(in)
		for _, k := range keys {
			if bytes.Contains(out, []byte(k)) {
				t.Fatalf("redact(%q) = %q holds %q", in, out, k)
			}
		}
		for i := bytes.IndexByte(out, '"'); i >= 0; {
			if s, ok := jsonStringAt(out[i:]); ok {
				for _, k := range keys {
					if strings.Contains(s, k) {
						t.Fatalf("redact(%q) = %q: the string at %d decodes to %q", in, out, i, s)
					}
				}
			}
			j := bytes.IndexByte(out[i+1:], '"')
			if j < 0 {
				break
			}
			i += 1 + j
		}
	})
}

// jsonStringAt decodes the JSON string starting at b[0] ('"'), if it is one.
func jsonStringAt(b []byte) (string, bool) {
	for i := 1; i < len(b); i++ {
		switch b[i] {
		case '\\':
			i++
		case '"':
			var s string
			return s, json.Unmarshal(b[:i+1], &s) == nil
		}
	}
	return "", false
}
