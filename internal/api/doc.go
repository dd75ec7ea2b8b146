// Package api is crib's own local API, beside the CRI: HTTP over a unix
// socket in the state directory (mode 0600, root only), for what the CRI
// has no verb for: loading, listing, inspecting, pulling with progress,
// removing, pruning and saving images, and listing the pulls in flight
// with each layer's progress (GET /v1/pulls, the CRI's pulls included).
// The server side is a plain http.Handler over an Images (the image store); Client speaks to it. An
// image reference travels as one escaped path segment (/v1/images/{ref}).
// A pull replies with JSON lines (PullEvent) and always status 200 once
// started: its last line carries the image id or the error. The package
// holds no state of its own and does no authorization beyond the socket's
// file mode.
package api
