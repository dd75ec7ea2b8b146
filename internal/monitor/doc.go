// Package monitor is the process that owns one container's stdio for the
// container's whole life, so that the container outlives the daemon and its
// CRI log keeps being written while the daemon restarts.
//
// The daemon calls Start, which runs cmd/crib-monitor, a small program of
// this package and pause only (or crib itself when it is not installed), as
// `crib-monitor monitor ARGS...` in its own session; the monitor (Main) makes itself
// a child subreaper, runs the OCI runtime's `create` with pipes as the
// container's stdout and stderr, reports the result on a sync pipe, then
// copies both streams into the CRI log file, serves a small control socket
// (reopen-log, wait, attach), reaps the container's init, and records its
// exit in an exit file before it quits. The daemon talks to a live monitor
// through Client and reads a dead one's verdict with ReadExit.
//
// A terminal container (StartConfig.Terminal) gets a pty from the runtime,
// whose master arrives on a console socket: the monitor copies it into the
// log as stdout and writes the container's input to it. Attach sessions
// (one connection each, framed as frame.go says) receive the output as it
// is read, before the log's line framing, and send input, the end of input
// (which closes the container's stdin pipe under stdin_once) and terminal
// resizes. A session that lags far behind is dropped rather than slow the
// container.
//
// Main also serves `monitor exec-shim ...`, the OCI runtime exec shim
// (ociruntime.ExecShimMain; see ExecShimArgs), so that the monitor binary
// needs one entry point only.
//
// It does not start, signal or delete containers (the daemon does that
// through ociruntime), and it keeps no state beyond the files it is given.
//
// Invariants: Start returns only once the container is created, or with
// the runtime's error and no monitor left behind. The exit file is written
// atomically and exactly once, after the init process was reaped and the
// output drained (at most drainTimeout after the exit); pending waits are
// answered after it exists. Log records never interleave within a line.
//
// Log format, one record per line: `<RFC 3339 UTC, nine fractional digits>
// <stdout|stderr> <F|P> <content>`. Content lines longer than 16 KiB are
// split into P records followed by a final F record. An unterminated line
// at end of stream stays unterminated, a P record, as containerd and conmon
// write it: the kubelet's reader adds a newline after F records only, so a
// container's last words without one (a termination message read from the
// log) come back without one. A line of exactly 16 KiB yields a P record
// and an empty F record. A "\r" before the newline is dropped. The lines of one burst of
// output (what one read returned, up to 32 KiB) are written with one write
// call and the same timestamp. LogReader and LogJoiner read the format back
// (any CRI writer's): `crib logs` and `crib run` print with them.
package monitor
