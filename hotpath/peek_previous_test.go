package hotpath

import (
	"strings"
	"testing"

	"github.com/switchyard/switchyard/router"
)

// TestPeekPreviousResponseID: on the responses surface the peek reads
// previous_response_id as an upstream's JSON decoder would (escapes
// decoded), and refuses every form in which the upstream might read
// another id than the gateway checks: a second copy (after a null, or
// escaped), a key equal only under case folding, a value that is not a
// string or not valid UTF-8 text. Other surfaces do not read it.
func TestPeekPreviousResponseID(t *testing.T) {
	for _, c := range []struct {
		member string
		want   string // the id read; "" = none
		err    string // in the refusal
	}{
		{``, "", ""},
		{`,"previous_response_id":null`, "", ""},
		{`,"previous_response_id":"resp_1"`, "resp_1", ""},
		{`,"previous_response_\u0069d":"resp_1"`, "resp_1", ""},
		{`,"\u0070revious_response_id":"resp\u005f1"`, "resp_1", ""},
		{`,"previous_response_id":"resp_1","previous_response_id":"resp_2"`, "", "twice"},
		{`,"previous_response_id":null,"previous_response_id":"resp_2"`, "", "twice"},
		{`,"previous_response_id":"resp_1","previous_response_\u0069d":"resp_2"`, "", "twice"},
		{`,"Previous_Response_Id":"resp_2"`, "", "case-insensitive"},
		{`,"previou\u017f_response_id":"resp_2"`, "", "case-insensitive"}, // ſ folds to s
		{`,"PREVIOUS_RESPONSE_ID":"resp_2"`, "", "case-insensitive"},
		{`,"previous_response_id":7`, "", "must be a string"},
		{`,"previous_response_id":{"id":"resp_2"}`, "", "must be a string"},
		{`,"previous_response_id":"resp_\ud800"`, "", "valid JSON string"},
		{`,"previous_response_ids":"resp_2"`, "", ""}, // another member
	} {
		body := []byte(`{"model":"m","input":"hi"` + c.member + `}`)
		var p peek
		err := p.parseFor(body, router.SurfaceResponses)
		switch {
		case c.err != "":
			if err == nil || !strings.Contains(err.Error(), c.err) {
				t.Errorf("%s: err %v; want one saying %q", body, err, c.err)
			}
		case err != nil:
			t.Errorf("%s: %v", body, err)
		case string(p.Previous) != c.want || (p.Previous == nil) != (c.want == ""):
			t.Errorf("%s: Previous %q; want %q", body, p.Previous, c.want)
		}
		// Elsewhere it is a member like any other.
		if c.err == "" || strings.Contains(c.err, "twice") || strings.Contains(c.err, "case") {
			p = peek{}
			if err := p.parseFor(body, router.SurfaceChat); err != nil && !strings.Contains(string(body), `\ud800`) {
				t.Errorf("chat %s: %v", body, err)
			} else if p.Previous != nil {
				t.Errorf("chat %s: Previous %q read off the responses surface", body, p.Previous)
			}
		}
	}
}
