package provider

import "testing"

// TestCreatedResponseID: the id is read from the event's first data line
// whatever its line endings, and only from a real data field.
func TestCreatedResponseID(t *testing.T) {
	const created = `{"type":"response.created","response":{"id":"resp_1"}}`
	for _, tc := range []struct{ name, frame, want string }{
		{"LF", "event: response.created\ndata: " + created + "\n\n", "resp_1"},
		{"CRLF", "event: response.created\r\ndata: " + created + "\r\n\r\n", "resp_1"},
		{"lone CR", "event: response.created\rdata: " + created + "\r\r", "resp_1"},
		{"lone CR, a field after", "data: " + created + "\rid: 7\r\r", "resp_1"},
		{"no space", "data:" + created + "\n\n", "resp_1"},
		{"data inside another field", "x-data: " + created + "\n\n", ""},
		{"no id", "data: {\"type\":\"response.created\"}\n\n", ""},
		{"not JSON", "data: [DONE]\n\n", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := string(CreatedResponseID([]byte(tc.frame))); got != tc.want {
				t.Fatalf("got %q; want %q", got, tc.want)
			}
		})
	}
}
