// Package content stores immutable blobs (layers, configs, manifests) by
// digest under <root>/blobs/sha256/<hex>.
//
// It owns the blob files and the ingest directory <root>/ingest. Every write
// goes to a temporary file in the ingest directory, is hashed while it is
// written, and is renamed into place only when the sha256 digest (and the
// size, when the caller knows it) match; a mismatch leaves nothing behind.
// So a blob under blobs/ always holds exactly the bytes its name promises.
// Partial ingests left by a crash are removed by Open.
//
// It does not know what a blob means (no manifest parsing) and does not
// decide when a blob is garbage: callers that hold references (the image
// store) delete blobs they no longer need.
package content
