package hotpath

import (
	"strings"
	"testing"

	"github.com/switchyard/switchyard/tenancy"
)

// TestResponseOwnershipSmuggledID: a key naming another key's response in
// a form the gateway once skipped but the upstream's JSON decoder reads as
// previous_response_id (an escaped key, a second copy after a null or
// after an id the key owns, a key equal only under case folding) is
// refused before any upstream call: 404 response_not_found when the one
// id is another key's, 400 when the member is repeated or misspelled.
func TestResponseOwnershipSmuggledID(t *testing.T) {
	up := startResponsesMock(t)
	tg := startGateway(t, strings.Replace(ownersYAML, "URL", up.url, 1))
	tg.g.Owners = tenancy.NewMemory(0, nil)
	r := tg.do("POST", "/v1/responses", `{"model":"x","input":"acme's secret"}`, "Authorization", "Bearer sy-acme")
	if r.Status != 200 {
		t.Fatalf("acme create: %d %s", r.Status, r.Body)
	}
	theirs := createdID(t, r.Body)
	r = tg.do("POST", "/v1/responses", `{"model":"x","input":"globex's"}`, "Authorization", "Bearer sy-globex")
	if r.Status != 200 {
		t.Fatalf("globex create: %d %s", r.Status, r.Body)
	}
	mine := createdID(t, r.Body)

	before := up.calls()
	for _, c := range []struct {
		name, member string
		status       int
		code, want   string
	}{
		{"escaped key", `"previous_response_\u0069d":"` + theirs + `"`, 404, "response_not_found", theirs},
		{"escaped value", `"previous_response_id":"` + strings.Replace(theirs, "resp_", `resp\u005f`, 1) + `"`, 404, "response_not_found", theirs},
		{"null then the id", `"previous_response_id":null,"previous_response_id":"` + theirs + `"`, 400, "invalid_request", "twice"},
		{"own id then theirs", `"previous_response_id":"` + mine + `","previous_response_id":"` + theirs + `"`, 400, "invalid_request", "twice"},
		{"escaped copy after own", `"previous_response_id":"` + mine + `","previous_response_\u0069d":"` + theirs + `"`, 400, "invalid_request", "twice"},
		{"case folded", `"Previous_Response_Id":"` + theirs + `"`, 400, "invalid_request", "case-insensitive"},
		{"not a string", `"previous_response_id":["` + theirs + `"]`, 400, "invalid_request", "must be a string"},
	} {
		t.Run(c.name, func(t *testing.T) {
			body := `{"model":"x","input":"more",` + c.member + `}`
			r := tg.do("POST", "/v1/responses", body, "Authorization", "Bearer sy-globex")
			if r.Status != c.status || !strings.Contains(r.Body, `"code":"`+c.code+`"`) || !strings.Contains(r.Body, c.want) {
				t.Errorf("globex %s: %d %s; want %d %s naming %q", body, r.Status, r.Body, c.status, c.code, c.want)
			}
		})
	}
	if n := up.calls() - before; n != 0 {
		t.Fatalf("%d smuggled continuations reached the upstream; want none", n)
	}
	// The owner's own continuation, in any of the encodings, still goes.
	r = tg.do("POST", "/v1/responses", `{"model":"x","input":"more","previous_response_\u0069d":"`+theirs+`"}`, "Authorization", "Bearer sy-acme")
	if r.Status != 200 || up.calls() != before+1 {
		t.Fatalf("acme's escaped continuation: %d %s", r.Status, r.Body)
	}
	// A null names nothing: no check, forwarded.
	r = tg.do("POST", "/v1/responses", `{"model":"x","input":"more","previous_response_id":null}`, "Authorization", "Bearer sy-globex")
	if r.Status != 200 || up.calls() != before+2 {
		t.Fatalf("a null previous_response_id: %d %s", r.Status, r.Body)
	}
}
