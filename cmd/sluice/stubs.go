package main

import (
	"fmt"
	"os"
)

func cmdProxy(args []string) int {
	fmt.Fprintln(os.Stderr, "sluice proxy: not built yet")
	return 1
}
