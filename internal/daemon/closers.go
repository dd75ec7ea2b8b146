package daemon

import (
	"errors"
	"fmt"
)

// closers are the close functions of what the daemon opened, in the order
// it opened them.
type closers []closer

type closer struct {
	name  string
	close func() error
}

// add records how to close what was just opened, named for errors.
func (c *closers) add(name string, close func() error) {
	*c = append(*c, closer{name, close})
}

// closeAll closes everything, newest first, and empties the list; it
// goes on past failures and returns them all.
func (c *closers) closeAll() error {
	var errs []error
	for i := len(*c) - 1; i >= 0; i-- {
		cl := (*c)[i]
		if err := cl.close(); err != nil {
			errs = append(errs, fmt.Errorf("close %s: %w", cl.name, err))
		}
	}
	*c = nil
	return errors.Join(errs...)
}
