package provider

// CreatedResponseID returns a copy of the response id a Responses API
// stream's first event (response.created) carries in response.id, or nil.
// frame is the event as readEvent relayed it; its first data line is read
// with readEvent's own line and field rules (any line ending, the exact
// field name), so the id recorded for the key is the one the client's
// parser reads.
func CreatedResponseID(frame []byte) []byte {
	var data []byte
	for len(frame) > 0 && data == nil {
		n, _ := lineLen(frame)
		line := frame[:n]
		frame = frame[n:]
		if at, ok := dataField(line); ok {
			start, end := fieldValue(line, at)
			data = line[start:end]
		}
	}
	if data == nil {
		return nil
	}
	p := parserPool.Get()
	defer parserPool.Put(p)
	v, err := p.ParseBytes(data)
	if err != nil {
		return nil
	}
	id := v.GetStringBytes("response", "id")
	if len(id) == 0 {
		return nil
	}
	return append([]byte(nil), id...)
}
