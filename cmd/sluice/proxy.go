package main

import (
	"fmt"
	"net/url"
	"os"
	"strconv"

	"github.com/sluicehq/sluice/config"
	"github.com/sluicehq/sluice/host"
)

func cmdProxy(args []string) int {
	fs := newFlags("proxy", "--to URL [--listen ADDR]", `Reverse-proxy every request to one upstream (http://, https:// or h2c://),
streaming bodies, with X-Forwarded-* headers and keep-alive connections.`)
	to := fs.String("to", "", "upstream `URL`, like http://127.0.0.1:9000")
	listen := fs.String("listen", "127.0.0.1:8080", "`address` to listen on")
	level := fs.String("log-level", "info", "log `level`: debug, info, warn, error")
	if rc := parse(fs, args); rc >= 0 {
		return rc
	}
	cfg, err := proxyConfig(*to, *listen)
	if err != nil {
		fmt.Fprintln(os.Stderr, "sluice proxy:", err)
		return 2
	}
	log := logger(*level)
	fmt.Fprintf(os.Stderr, "sluice: proxying http://%s to %s\n", displayAddr(*listen), *to)
	return run(host.InstanceOptions{Log: log, Config: cfg}, log)
}

// proxyConfig is the config of the one-line proxy mode, checked like any
// config file.
func proxyConfig(to, listen string) (*config.Config, error) {
	if to == "" {
		return nil, fmt.Errorf("--to URL is required")
	}
	u, err := url.Parse(to)
	if err != nil || u.Host == "" {
		return nil, fmt.Errorf("--to %q: want a URL like http://127.0.0.1:9000", to)
	}
	src := fmt.Sprintf(`site "*" {
  listen = [%s]
  route "/" {
    proxy {
      upstreams = [%s]
    }
  }
}
`, strconv.Quote(listen), strconv.Quote(u.Scheme+"://"+u.Host))
	cfg, diags := config.Parse("sluice-proxy.hcl", []byte(src))
	if diags.HasErrors() {
		return nil, fmt.Errorf("%s", diags.Error())
	}
	return cfg, nil
}
