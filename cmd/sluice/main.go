// Command sluice is a programmable web server: static files and reverse
// proxying on a native fast path, user filters as WebAssembly modules,
// configured in HCL. Run `sluice help` for the commands.
package main

import (
	"fmt"
	"os"
)

type command struct {
	name, args, summary string
	run                 func(args []string) int
}

var commands []command

func init() {
	commands = []command{
		{"serve", "[-c FILE.hcl]", "run a config; with no config, serve the current directory on 127.0.0.1:8080", cmdServe},
		{"file-server", "--root DIR [--listen ADDR] [--browse]", "serve a directory (like python -m http.server)", cmdFileServer},
		{"proxy", "--to URL [--listen ADDR]", "reverse-proxy everything to one upstream", cmdProxy},
		{"validate", "-c FILE.hcl", "check a config (and start each filter with its config); print FILE:LINE:COL problems", cmdValidate},
		{"fmt", "[-w] FILE.hcl", "print (or rewrite) a config in canonical format", cmdFmt},
		{"reload", "[--admin ADDR]", "ask a running server to reload its config", cmdReload},
		{"upgrade", "[--admin ADDR | --pid PID]", "replace a running server's binary without refusing a connection", cmdUpgrade},
		{"health", "[--admin ADDR | --url URL]", "exit 0 when a running server is healthy (for container health checks)", cmdHealth},
		{"version", "", "print the version, the commit and the Go version", cmdVersion},
		{"help", "[COMMAND]", "show help", cmdHelp},
	}
}

func main() {
	args := os.Args[1:]
	if len(args) == 0 {
		os.Exit(cmdServe(nil))
	}
	name := args[0]
	if name == "-h" || name == "--help" || name == "-help" {
		name = "help"
	}
	if len(name) > 0 && name[0] == '-' { // flags without a command: serve
		os.Exit(cmdServe(args))
	}
	for _, c := range commands {
		if c.name == name {
			os.Exit(c.run(args[1:]))
		}
	}
	if name == "filter" {
		os.Exit(cmdFilter(args[1:]))
	}
	fmt.Fprintf(os.Stderr, "sluice: unknown command %q\n\n", name)
	usage()
	os.Exit(2)
}

func usage() {
	fmt.Fprintf(os.Stderr, "%s: a programmable web server\n\nUsage:\n  sluice [COMMAND] [FLAGS]\n\nCommands:\n", versionLine())
	for _, c := range commands {
		fmt.Fprintf(os.Stderr, "  %-12s %s\n", c.name, c.summary)
	}
	fmt.Fprintf(os.Stderr, "  %-12s %s\n", "filter run", "run one request through a filter module, without a server")
	fmt.Fprintf(os.Stderr, "\nWith no command, sluice serves the current directory. `sluice help COMMAND` tells more.\n")
}

func cmdHelp(args []string) int {
	if len(args) == 0 {
		usage()
		return 0
	}
	for _, c := range commands {
		if c.name == args[0] {
			return c.run([]string{"-h"})
		}
	}
	if args[0] == "filter" {
		return cmdFilter([]string{"-h"})
	}
	fmt.Fprintf(os.Stderr, "sluice: unknown command %q\n", args[0])
	return 2
}

func cmdVersion(args []string) int {
	if len(args) > 0 {
		fmt.Fprintln(os.Stderr, "usage: sluice version")
		if args[0] == "-h" || args[0] == "--help" {
			return 0
		}
		return 2
	}
	fmt.Println(versionLine())
	return 0
}
