package main

import (
	"fmt"
	"io"

	"github.com/crib-dev/crib/internal/config"
)

func configCmd(args []string, stdout, stderr io.Writer) int {
	if len(args) != 1 || args[0] != "default" {
		fmt.Fprintln(stderr, "usage: crib config default")
		return 2
	}
	data, err := config.Encode(config.Default())
	if err != nil {
		fmt.Fprintf(stderr, "crib config: %v\n", err)
		return 1
	}
	_, _ = stdout.Write(data)
	return 0
}
