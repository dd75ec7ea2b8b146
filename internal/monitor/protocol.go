package monitor

// The control socket speaks one request per connection: the client writes
// one command line, the monitor answers with one JSON line (reply) and
// closes the connection.
const (
	// cmdWait is answered once the container exited, with its exit record.
	cmdWait = "wait"
	// cmdReopenLog reopens the CRI log file (after log rotation renamed it).
	cmdReopenLog = "reopen-log"
)

// maxRequest bounds a request line.
const maxRequest = 256

// reply is the monitor's answer.
type reply struct {
	OK    bool   `json:"ok,omitempty"`
	Error string `json:"error,omitempty"`
	Exit  *Exit  `json:"exit,omitempty"`
}
