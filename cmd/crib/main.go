// Command crib is a Kubernetes node runtime: a CRI runtime daemon, and the
// tools around it. Hidden subcommands are crib re-executing itself: the
// container monitor and the pod's pause process.
package main

import (
	"fmt"
	"io"
	"os"

	"github.com/crib-dev/crib/internal/nshold"
)

const usage = `crib: a Kubernetes node runtime

Usage:
  crib daemon [flags]        serve the CRI on a unix socket
  crib agent [flags]         run the pods of a manifest directory (the node agent)
  crib run POD.yaml          run one pod in the foreground, until it ends or Ctrl-C
                             (--wait=ready: return once it is ready, leaving it running)
  crib pods [-wide]          list the agent's pods (-wide: with their user namespaces)
  crib ps                    list the agent's containers
  crib events [POD]          list the agent's events, or one pod's (why a container waits)
  crib logs [-f] POD         print a container's log of an agent's pod
  crib exec POD -- CMD...    run a command in a container of an agent's pod (no -it)
  crib checkpoint POD        write a checkpoint archive of a container of an agent's pod
  crib image COMMAND         pull, ls, inspect, rm, save, load, prune images
  crib config default        print the default configuration
  crib config dump           print the effective configuration, and which file set each key
  crib config cni            print the CNI network crib writes into an empty CNI conf dir
  crib version               print the version

Run "crib COMMAND -h" for the flags of a command.
`

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

func run(args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		fmt.Fprint(stderr, usage)
		return 2
	}
	switch args[0] {
	case "daemon":
		return daemonCmd(args[1:], stderr)
	case "agent":
		return agentCmd(args[1:], stderr)
	case "run":
		return runCmd(args[1:], stdout, stderr)
	case "pods", "ps":
		return listCmd(args[0], args[1:], stdout, stderr)
	case "events":
		return eventsCmd(args[1:], stdout, stderr)
	case "logs":
		return logsCmd(args[1:], stdout, stderr)
	case "exec":
		return execCmd(args[1:], stdout, stderr)
	case "checkpoint":
		return checkpointCmd(args[1:], stdout, stderr)
	case "image":
		return imageCmd(args[1:], stdout, stderr)
	case "config":
		return configCmd(args[1:], stdout, stderr)
	case "version", "--version":
		fmt.Fprintln(stdout, "crib", version())
		return 0
	case "monitor":
		return monitorMain(args[1:])
	case "pause":
		return pauseMain()
	case "hold":
		// The namespace holder, when crib runs as its own monitor binary.
		return nshold.Main(args[1:])
	case "-h", "--help", "help":
		fmt.Fprint(stdout, usage)
		return 0
	default:
		fmt.Fprintf(stderr, "crib: unknown command %q\n\n%s", args[0], usage)
		return 2
	}
}
