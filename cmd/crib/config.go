package main

import (
	"flag"
	"fmt"
	"io"

	"github.com/crib-dev/crib/internal/config"
	"github.com/crib-dev/crib/internal/daemon"
)

const configUsage = `usage: crib config COMMAND

Commands:
  default                  print the default configuration
  dump [--config FILE]     print the effective configuration: FILE (default
                           /etc/crib/crib.toml), then its drop-ins
                           (/etc/crib/crib.d/*.toml), each key a file set
                           followed by "# from FILE:LINE"
  cni [--config FILE]      print the CNI network configuration crib writes
                           into an empty CNI conf dir under the effective
                           configuration (as 10-crib.conflist)
`

func configCmd(args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		fmt.Fprint(stderr, configUsage)
		return 2
	}
	switch args[0] {
	case "default":
		if len(args) != 1 {
			fmt.Fprint(stderr, configUsage)
			return 2
		}
		data, err := config.DefaultTOML()
		if err != nil {
			fmt.Fprintf(stderr, "crib config: %v\n", err)
			return 1
		}
		_, _ = stdout.Write(data)
		return 0
	case "dump":
		return configDumpCmd(args[1:], stdout, stderr)
	case "cni":
		return configCNICmd(args[1:], stdout, stderr)
	case "-h", "--help", "help":
		fmt.Fprint(stdout, configUsage)
		return 0
	default:
		fmt.Fprintf(stderr, "crib config: unknown command %q\n\n%s", args[0], configUsage)
		return 2
	}
}

// loadConfigFiles parses the flags of `crib config NAME` (--config) and
// loads that file and its drop-ins; code is non-zero when that failed,
// after saying why.
func loadConfigFiles(name string, args []string, stderr io.Writer) (l config.Loaded, code int) {
	fs := flag.NewFlagSet("crib config "+name, flag.ContinueOnError)
	fs.SetOutput(stderr)
	cfgPath := fs.String("config", config.DefaultPath, "configuration file; its drop-ins are FILE without .toml, plus .d/*.toml")
	if err := fs.Parse(args); err != nil {
		return l, 2
	}
	if fs.NArg() > 0 {
		fmt.Fprint(stderr, configUsage)
		return l, 2
	}
	l, err := config.LoadFiles(*cfgPath, *cfgPath == config.DefaultPath)
	if err != nil {
		fmt.Fprintf(stderr, "crib config %s: %v\n", name, err)
		return l, 1
	}
	return l, 0
}

// configDumpCmd prints the effective configuration even when it does not
// validate, then the validation errors.
func configDumpCmd(args []string, stdout, stderr io.Writer) int {
	l, code := loadConfigFiles("dump", args, stderr)
	if code != 0 {
		return code
	}
	data, err := config.Dump(l)
	if err != nil {
		fmt.Fprintf(stderr, "crib config dump: %v\n", err)
		return 1
	}
	_, _ = stdout.Write(data)
	if err := l.Validate(); err != nil {
		fmt.Fprintf(stderr, "crib config dump: the configuration is not valid:\n%v\n", err)
		return 1
	}
	return 0
}

// configCNICmd prints the default CNI network of the effective
// configuration, for scripts/install.sh to put in place.
func configCNICmd(args []string, stdout, stderr io.Writer) int {
	l, code := loadConfigFiles("cni", args, stderr)
	if code != 0 {
		return code
	}
	if err := l.Validate(); err != nil {
		fmt.Fprintf(stderr, "crib config cni: %v\n", err)
		return 1
	}
	data, err := daemon.DefaultCNIConfig(l.Config)
	if err != nil {
		fmt.Fprintf(stderr, "crib config cni: %v\n", err)
		return 1
	}
	_, _ = stdout.Write(append(data, '\n'))
	return 0
}
