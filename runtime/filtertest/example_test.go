package filtertest_test

import (
	"context"
	"fmt"
	"os"

	"github.com/sluicehq/sluice/runtime"
	"github.com/sluicehq/sluice/runtime/filtertest"
)

// A filter author's test: load the module, run one request through it,
// look at what the filter did. Next plays the upstream.
func Example() {
	wasm, err := os.ReadFile("../testdata/set_header.wasm") // sets "x-sluice: on" and continues
	if err != nil {
		panic(err)
	}
	f, err := filtertest.Load(context.Background(), "mark", wasm, runtime.FilterOptions{}, nil, "")
	if err != nil {
		panic(err)
	}
	defer f.Close()

	x := filtertest.NewExchange("GET", "/", "Host", "example.test")
	res, err := f.Do(x, func(x *filtertest.Exchange) {
		x.SetStatus(201)
		x.RespBody.WriteString("made")
	})
	fmt.Println(res.Continued, err)
	fmt.Println(x.Header("x-sluice"), x.Status(), x.RespBody.String())
	// Output:
	// true <nil>
	// on 201 made
}
