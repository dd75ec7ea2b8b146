package main

import (
	"fmt"
	"net"
	"os"
	"strconv"
	"time"

	"golang.org/x/sys/unix"
)

// notifier tells systemd about the service's state (sd_notify(3)), for
// `crib daemon` and `crib run`, over the socket NOTIFY_SOCKET named when
// the process started; without one, send does nothing.
//
// go-systemd's daemon.SdNotify reads NOTIFY_SOCKET from the environment
// at each call, which would leave it there for every process crib starts;
// this keeps the socket's name in the notifier instead.
type notifier struct{ socket string }

// takeNotifySocket removes NOTIFY_SOCKET from the environment and returns
// a notifier for it.
func takeNotifySocket() notifier {
	n := notifier{socket: os.Getenv("NOTIFY_SOCKET")}
	os.Unsetenv("NOTIFY_SOCKET")
	return n
}

// send sends state, e.g. "READY=1". An abstract socket's name starts with
// '@', which the net package maps to the abstract namespace.
func (n notifier) send(state string) error {
	if n.socket == "" {
		return nil
	}
	conn, err := net.DialUnix("unixgram", nil, &net.UnixAddr{Name: n.socket, Net: "unixgram"})
	if err != nil {
		return fmt.Errorf("notify systemd: %w", err)
	}
	defer conn.Close()
	if _, err := conn.Write([]byte(state)); err != nil {
		return fmt.Errorf("notify systemd: %w", err)
	}
	return nil
}

// reloadingState is the RELOADING=1 message with the CLOCK_MONOTONIC
// time systemd asks of a reload (Type=notify-reload, systemd 253+).
func reloadingState() string {
	var ts unix.Timespec
	usec := int64(0)
	if err := unix.ClockGettime(unix.CLOCK_MONOTONIC, &ts); err == nil {
		usec = ts.Nano() / int64(time.Microsecond)
	}
	return "RELOADING=1\nMONOTONIC_USEC=" + strconv.FormatInt(usec, 10)
}
