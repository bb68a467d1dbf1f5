package telemetry

import "strconv"

// Batch API calls (docs/batches.md) in the Finished records: an upload, a
// batch created, read, cancelled or deleted, a list, a download. Their
// surface in the access log, the request counters, the audit log and the
// console is the API's name ("files", "batches", "message_batches").

// BatchCall names the batch API call a Finished record is for.
type BatchCall struct {
	// API is "files", "batches" or "message_batches"; "" = the record is
	// not a batch API call.
	API string
	// Op is the operation: "upload", "create", "read", "list", "cancel",
	// "delete", "content" or "results".
	Op string
	// ID is the file or batch id the call named or handed out; nil = none
	// (a list, or a refusal before one was known). Request input: written
	// escaped and truncated like the model.
	ID []byte
}

// famBatchCalls counts batch API calls by client key, target and operation.
const famBatchCalls = "switchyard_batch_calls_total"

// batchFinished counts a batch API call: switchyard_requests_total with
// its API as the surface, switchyard_key_requests_total, and
// switchyard_batch_calls_total by key, target and operation ("files.upload").
// Batch calls are rare: these series are looked up by name each time.
func (m *Metrics) batchFinished(e *Entry) {
	code := "other"
	if e.Status >= 100 && e.Status < statusSlots {
		code = strconv.Itoa(e.Status)
	}
	m.set.GetOrCreateCounter(seriesName(famRequests, "surface", e.Batch.API, "status", code)).Inc()
	m.keyRequest(e.Key, e.Status)
	m.set.GetOrCreateCounter(seriesName(famBatchCalls, "key", e.Key, "target", e.Target,
		"operation", e.Batch.API+"."+e.Batch.Op)).Inc()
}

// SetBatchOwned sets switchyard_batch_objects_owned for key's objects of
// kind ("file", "batch", "message_batch"): how many ids it owns, as the
// tenancy store counted them.
func (m *Metrics) SetBatchOwned(key, kind string, n int) {
	m.set.GetOrCreateGauge(seriesName(famBatchOwned, "key", key, "kind", kind), nil).Set(float64(n))
}

// famBatchOwned is the ids each client key owns, by kind.
const famBatchOwned = "switchyard_batch_objects_owned"
