package main

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/sluicehq/sluice/runtime"
	"github.com/sluicehq/sluice/runtime/filtertest"
)

// headerFlags collects repeated --header 'Name: value' flags.
type headerFlags []string

func (h *headerFlags) String() string     { return strings.Join(*h, ", ") }
func (h *headerFlags) Set(v string) error { *h = append(*h, v); return nil }

func cmdFilter(args []string) int {
	return runFilterCmd(args, os.Stdout, os.Stderr)
}

const filterAbout = `Run one request through a filter module, without a server, and print what
the filter did: the request as the next handler would see it, or the
answer the filter gave, plus its log lines and timings. When the filter
continues, the next handler answers 200 with an empty body (or --upstream-*).

The request comes from --request FILE (a raw HTTP/1.1 request, "-" for
stdin) or from --method, --url, --header and --body. --config takes the
filter's config as JSON, or @FILE.

Examples:
  sluice filter run filters/keyauth/keyauth.wasm --config '{"keys": {"alice": "k1"}}' \
      --url '/api?x=1' --header 'X-API-Key: k1'
  sluice filter run filter.wasm --request req.http`

func runFilterCmd(args []string, stdout, stderr io.Writer) int {
	r, code := parseFilterRun(args, stderr)
	if r == nil {
		return code
	}
	return r.report(r.run(), stdout, stderr)
}

// filterRun is one `sluice filter run`: the module, its config and the
// request, read and checked, and what the next handler answers.
type filterRun struct {
	path     string // the module's file
	wasm     []byte
	config   []byte
	request  *filtertest.Exchange
	upStatus int
	upBody   string
	timeout  time.Duration
	memory   int64
}

// parseFilterRun reads the command line and the files it names. It
// returns nil and the exit code when there is nothing to run: 0 for
// help, 2 for a usage error, 1 for an input that cannot be read.
func parseFilterRun(args []string, stderr io.Writer) (*filterRun, int) {
	if len(args) == 0 || args[0] == "-h" || args[0] == "--help" || args[0] == "help" {
		fmt.Fprintf(stderr, "Usage: sluice filter run MODULE.wasm [FLAGS]\n\n%s\n\nRun `sluice filter run -h` for the flags.\n", filterAbout)
		if len(args) == 0 {
			return nil, 2
		}
		return nil, 0
	}
	if args[0] != "run" {
		fmt.Fprintf(stderr, "sluice filter: unknown subcommand %q (want run)\n", args[0])
		return nil, 2
	}
	fs := flag.NewFlagSet("filter run", flag.ContinueOnError)
	fs.SetOutput(stderr)
	cfgFlag := fs.String("config", "{}", "the filter's config: JSON, or @FILE")
	reqFile := fs.String("request", "", `a raw HTTP request to run ("-": stdin)`)
	method := fs.String("method", "GET", "request method")
	target := fs.String("url", "/", "request URL: a path with query, or an absolute URL (sets Host)")
	var headers headerFlags
	fs.Var(&headers, "header", "request header 'Name: value' (repeatable)")
	body := fs.String("body", "", "request body")
	r := &filterRun{}
	fs.IntVar(&r.upStatus, "upstream-status", 200, "status the next handler answers with")
	fs.StringVar(&r.upBody, "upstream-body", "", "body the next handler answers with")
	fs.DurationVar(&r.timeout, "timeout", time.Second, "deadline of each guest call")
	fs.Int64Var(&r.memory, "memory", 64<<20, "memory limit of the instance, bytes")
	fs.Usage = func() {
		fmt.Fprintf(stderr, "Usage: sluice filter run MODULE.wasm [FLAGS]\n\n%s\n\nFlags:\n", filterAbout)
		fs.PrintDefaults()
	}
	positional, code := parseInterspersed(fs, args[1:])
	if code >= 0 {
		return nil, code
	}
	if len(positional) != 1 {
		fmt.Fprintln(stderr, "sluice filter run: want exactly one MODULE.wasm")
		fs.Usage()
		return nil, 2
	}
	r.path = positional[0]
	fail := func(format string, a ...any) (*filterRun, int) {
		fmt.Fprintf(stderr, "sluice filter run: "+format+"\n", a...)
		return nil, 1
	}
	var err error
	if r.wasm, err = os.ReadFile(r.path); err != nil {
		return fail("%v", err)
	}
	r.config = []byte(*cfgFlag)
	if strings.HasPrefix(*cfgFlag, "@") {
		if r.config, err = os.ReadFile((*cfgFlag)[1:]); err != nil {
			return fail("config: %v", err)
		}
	}
	if !json.Valid(r.config) {
		return fail("config is not valid JSON: %s", r.config)
	}
	if *reqFile != "" {
		r.request, err = readRequest(*reqFile)
	} else {
		r.request, err = flagRequest(*method, *target, headers, *body)
	}
	if err != nil {
		return fail("request: %v", err)
	}
	return r, 0
}

// parseInterspersed parses flags that may come before or after the
// positional arguments, and returns those. code is -1 when parsing
// succeeded, else the exit code (0 for -h).
func parseInterspersed(fs *flag.FlagSet, args []string) (positional []string, code int) {
	for {
		if err := fs.Parse(args); err != nil {
			if err == flag.ErrHelp {
				return nil, 0
			}
			return nil, 2
		}
		if fs.NArg() == 0 {
			return positional, -1
		}
		positional = append(positional, fs.Arg(0))
		args = fs.Args()[1:]
	}
}

// filterOutcome is what running the filter did: the load's and the
// calls' times, the result, the guest's and runtime's log lines, and the
// load's or the run's error.
type filterOutcome struct {
	load, instantiate time.Duration
	res               filtertest.Result
	logs              string
	loadErr, err      error
}

// run loads the module on an engine with the runtime's default cache
// (filtertest.Load "") and runs the request through it.
func (r *filterRun) run() *filterOutcome {
	var logs bytes.Buffer
	log := slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{
		Level: slog.LevelDebug,
		ReplaceAttr: func(groups []string, a slog.Attr) slog.Attr {
			if a.Key == slog.TimeKey && len(groups) == 0 {
				return slog.Attr{}
			}
			return a
		},
	}))
	o := &filterOutcome{}
	start := time.Now()
	f, err := filtertest.Load(context.Background(), strings.TrimSuffix(filepath.Base(r.path), ".wasm"), r.wasm,
		runtime.FilterOptions{Config: r.config, Timeout: r.timeout, MemoryLimit: r.memory, PoolSize: 1}, log, "")
	o.load = time.Since(start)
	if err != nil {
		o.loadErr, o.logs = err, logs.String()
		return o
	}
	o.instantiate = f.Instantiate
	o.res, o.err = f.Do(r.request, func(x *filtertest.Exchange) {
		x.StatusCode = r.upStatus
		x.RespBody.WriteString(r.upBody)
	})
	o.logs = logs.String() // what closing logs is not the request's
	_ = f.Close()
	return o
}

// report prints what the filter did and returns the exit code.
func (r *filterRun) report(o *filterOutcome, stdout, stderr io.Writer) int {
	fail := func(format string, a ...any) int {
		fmt.Fprintf(stderr, "sluice filter run: "+format+"\n", a...)
		return 1
	}
	sum := sha256.Sum256(r.wasm)
	fmt.Fprintf(stdout, "module   %s (%s, sha256:%s)\n", r.path, size(len(r.wasm)), hex.EncodeToString(sum[:6]))
	if o.loadErr != nil {
		printLogs(stdout, o.logs)
		return fail("load: %v", o.loadErr)
	}
	fmt.Fprintf(stdout, "timing   load %s (instantiate %s), handle_request %s", round(o.load), round(o.instantiate), round(o.res.Request))
	if o.res.Continued {
		fmt.Fprintf(stdout, ", handle_response %s", round(o.res.Response))
	}
	fmt.Fprintln(stdout)
	if o.res.Features != 0 {
		fmt.Fprintf(stdout, "features %s\n", o.res.Features)
	}
	printLogs(stdout, o.logs)
	if o.err != nil {
		return fail("%v", o.err)
	}
	if o.res.Continued {
		fmt.Fprintln(stdout, "result   continued to the next handler")
		fmt.Fprintln(stdout, "\nrequest as the next handler sees it:")
		printRequest(stdout, r.request)
		fmt.Fprintln(stdout, "\nresponse after handle_response:")
	} else {
		fmt.Fprintln(stdout, "result   answered by the filter")
		fmt.Fprintln(stdout, "\nresponse:")
	}
	printResponse(stdout, r.request)
	return 0
}

func round(d time.Duration) time.Duration {
	switch {
	case d > time.Second:
		return d.Round(time.Millisecond)
	case d > time.Millisecond:
		return d.Round(10 * time.Microsecond)
	}
	return d.Round(time.Microsecond)
}

func size(n int) string {
	if n >= 1<<20 {
		return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20))
	}
	return fmt.Sprintf("%.1f KiB", float64(n)/1024)
}

func printLogs(w io.Writer, logs string) {
	for _, l := range strings.Split(strings.TrimSpace(logs), "\n") {
		if l != "" && !strings.Contains(l, "compiled wasm module") {
			fmt.Fprintf(w, "log      %s\n", l)
		}
	}
}

func flagRequest(method, target string, headers []string, body string) (*filtertest.Exchange, error) {
	uri := target
	var host string
	if !strings.HasPrefix(target, "/") && target != "*" {
		u, err := url.Parse(target)
		if err != nil || u.Host == "" {
			return nil, fmt.Errorf("--url %q: want a path (/a?b) or an absolute URL", target)
		}
		host, uri = u.Host, u.RequestURI()
	}
	x := filtertest.NewExchange(strings.ToUpper(method), uri)
	if host != "" {
		x.AddRequestHeader("Host", host)
	}
	for _, h := range headers {
		k, v, ok := strings.Cut(h, ":")
		if !ok || strings.TrimSpace(k) == "" {
			return nil, fmt.Errorf("--header %q: want 'Name: value'", h)
		}
		x.AddRequestHeader(strings.TrimSpace(k), strings.TrimSpace(v))
	}
	x.ReqBody = strings.NewReader(body)
	return x, nil
}

func readRequest(path string) (*filtertest.Exchange, error) {
	var src io.Reader = os.Stdin
	if path != "-" {
		b, err := os.ReadFile(path)
		if err != nil {
			return nil, err
		}
		// Accept files written with bare LF line ends.
		if !bytes.Contains(b, []byte("\r\n")) {
			head, rest, _ := bytes.Cut(b, []byte("\n\n"))
			b = append(bytes.ReplaceAll(head, []byte("\n"), []byte("\r\n")), append([]byte("\r\n\r\n"), rest...)...)
		}
		src = bytes.NewReader(b)
	}
	br := bufio.NewReader(src)
	r, err := http.ReadRequest(br)
	if err != nil {
		return nil, err
	}
	x := filtertest.NewExchange(r.Method, r.RequestURI)
	x.Protocol = r.Proto
	if r.Host != "" {
		x.AddRequestHeader("Host", r.Host)
	}
	names := make([]string, 0, len(r.Header))
	for k := range r.Header {
		names = append(names, k)
	}
	sort.Strings(names)
	for _, k := range names {
		for _, v := range r.Header[k] {
			x.AddRequestHeader(k, v)
		}
	}
	body, err := io.ReadAll(r.Body)
	if err != nil {
		return nil, err
	}
	if len(body) == 0 && r.ContentLength <= 0 && len(r.TransferEncoding) == 0 {
		// A hand-written file often has a body and no Content-Length.
		if body, err = io.ReadAll(br); err != nil {
			return nil, err
		}
	}
	x.ReqBody = bytes.NewReader(body)
	return x, nil
}

func printRequest(w io.Writer, x *filtertest.Exchange) {
	fmt.Fprintf(w, "  %s %s %s\n", x.Method(), x.URI, x.Proto())
	for _, h := range x.ReqHdr {
		fmt.Fprintf(w, "  %s: %s\n", h.Name, h.Value)
	}
	// What the filter left unread (or set) is what the next handler reads.
	if body, _ := io.ReadAll(x.RequestBody()); len(body) > 0 {
		fmt.Fprintf(w, "\n  %s\n", indent(string(body)))
	}
}

func printResponse(w io.Writer, x *filtertest.Exchange) {
	fmt.Fprintf(w, "  %d %s\n", x.Status(), http.StatusText(x.Status()))
	for _, h := range x.RespHdr {
		fmt.Fprintf(w, "  %s: %s\n", h.Name, h.Value)
	}
	if x.RespBody.Len() > 0 {
		fmt.Fprintf(w, "\n  %s\n", indent(x.RespBody.String()))
	}
}

func indent(s string) string {
	return strings.ReplaceAll(strings.TrimRight(s, "\n"), "\n", "\n  ")
}
