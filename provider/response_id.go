package provider

import (
	"bytes"

	"github.com/valyala/fastjson"
)

// CreatedResponseID returns a copy of the response id a Responses API
// stream's first event (response.created) carries in response.id, or nil.
func CreatedResponseID(frame []byte) []byte {
	i := bytes.Index(frame, []byte("data:"))
	if i < 0 {
		return nil
	}
	data := frame[i+len("data:"):]
	if j := bytes.IndexByte(data, '\n'); j >= 0 {
		data = data[:j]
	}
	var p fastjson.Parser
	v, err := p.ParseBytes(bytes.TrimSpace(data))
	if err != nil {
		return nil
	}
	id := v.GetStringBytes("response", "id")
	if len(id) == 0 {
		return nil
	}
	return append([]byte(nil), id...)
}
