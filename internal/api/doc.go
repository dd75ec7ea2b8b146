// Package api is crib's own local API, beside the CRI: HTTP over a unix
// socket in the state directory (mode 0600, root only), for what the CRI
// has no verb for, such as loading an image tarball into a running daemon's
// store. The server side is a plain http.Handler; Client speaks to it.
package api
