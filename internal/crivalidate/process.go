package crivalidate

import (
	"fmt"
	"strings"
)

// Argv checks the strings of a process's argument or environment list as
// execve would take them: each at most MaxArgLen with no NUL. It returns
// their size as execve counts it, for the caller's total.
func Argv(field string, argv []string) (int, error) {
	size := 0
	for i, a := range argv {
		if err := String(fmt.Sprintf("%s[%d]", field, i), a, MaxArgLen); err != nil {
			return 0, err
		}
		size += len(a) + 1
		if size > MaxArgsTotal {
			return 0, Invalid(field, "more than %d bytes", MaxArgsTotal)
		}
	}
	return size, nil
}

// Command checks an exec's command: not empty, within execve's bounds.
func Command(field string, cmd []string) error {
	if len(cmd) == 0 {
		return Invalid(field, "is empty")
	}
	_, err := Argv(field, cmd)
	return err
}

// EnvKey checks an environment variable's name: not empty, no '=' (the
// separator) and no NUL.
func EnvKey(field, key string) error {
	if key == "" || strings.ContainsAny(key, "=\x00") {
		return Invalid(field, "%q is not an environment variable name", key)
	}
	return nil
}
