package monitor

// The control socket speaks one request per connection: the client writes
// one command line, the monitor answers with one JSON line (reply) and
// closes the connection. An attach connection goes on after the reply with
// frames both ways (frame.go) until the container's output ended or the
// client hung up.
const (
	// cmdWait is answered once the container exited, with its exit record.
	cmdWait = "wait"
	// cmdReopenLog reopens the CRI log file (after log rotation renamed it).
	cmdReopenLog = "reopen-log"
	// cmdAttach streams the container's output to the client and the
	// client's input to the container.
	cmdAttach = "attach"
	// cmdSignal ("signal N") sends signal N to the container's init;
	// "signal 9 all" kills all the container's processes, which the monitor
	// does only when the init is its PID namespace's.
	cmdSignal = "signal"
	signalAll = "all"
)

// maxRequest bounds a request line.
const maxRequest = 256

// reply is the monitor's answer.
type reply struct {
	OK    bool   `json:"ok,omitempty"`
	Error string `json:"error,omitempty"`
	Exit  *Exit  `json:"exit,omitempty"`
	// Exited answers a signal for an init that has exited (and was reaped).
	Exited bool `json:"exited,omitempty"`
}
