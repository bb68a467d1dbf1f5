package upstream

import (
	"bytes"
	"testing"
)

// answer128K is a 128 KB chat completion whose content is French prose: as
// some encoders write it ("\u00e9" for é, "\n" between lines) when escaped,
// else the same text with é written as UTF-8.
func answer128K(escaped bool) []byte {
	line := "Le caf\u00e9 de l'\u00e9t\u00e9 est tr\u00e8s bon, d\u00e9j\u00e0 pr\u00eat.\n"
	if escaped {
		line = `Le caf\u00e9 de l'\u00e9t\u00e9 est tr\u00e8s bon, d\u00e9j\u00e0 pr\u00eat.\n`
	}
	return answerOf(line)
}

// answerOf is a 128 KB chat completion whose content repeats line.
func answerOf(line string) []byte {
	b := []byte(`{"id":"chatcmpl-1","object":"chat.completion","created":1,"model":"gpt-4o","choices":[{"index":0,"message":{"role":"assistant","content":"`)
	for len(b) < 128<<10 {
		b = append(b, line...)
	}
	return append(b, `"},"finish_reason":"stop"}]}`...)
}

// BenchmarkRedact is redact's cost on a 128 KB answer holding no credential,
// for an api_key target and an AWS one (three credentials): "literal" has no
// backslash (the fast path), "escaped" is full of \u00e9 and \n escapes,
// "slashes" of links written with \/ (an escape the keys' '/' can take).
func BenchmarkRedact(b *testing.B) {
	targets := []struct {
		name string
		ep   Endpoint
	}{
		{"apikey", Endpoint{APIKey: "sk-proj-Zm9vYmFyYmF6+/quxQ0123456789abcdef"}},
		{"aws", Endpoint{AWSAccessKeyID: "AKIAIOSFODNN7EXAMPLE", AWSSecretAccessKey: "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
			AWSSessionToken: "IQoJb3JpZ2luX2VjEJr//////////wEaCXVzLWVhc3QtMSJHMEUCIQD+example"}},
	}
	for _, tc := range targets {
		t := &Target{secrets: secretsOf(&tc.ep)}
		for _, body := range []struct {
			name string
			b    []byte
		}{
			{"literal", answer128K(false)},
			{"escaped", answer128K(true)},
			{"slashes", answerOf(`see https:\/\/docs.example.com\/guide\/v2\/start and `)},
		} {
			b.Run(tc.name+"/"+body.name, func(b *testing.B) {
				body := body.b
				b.SetBytes(int64(len(body)))
				b.ReportAllocs()
				for b.Loop() {
					if out := t.redact(body); !bytes.Equal(out[:8], body[:8]) {
						b.Fatal("redact changed the answer")
					}
				}
			})
		}
	}
}
