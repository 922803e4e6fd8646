package exchange

import "testing"

// Both adapters keep what SetRawPath records.
func TestRawPathAdapters(t *testing.T) {
	for _, x := range []Exchange{new(fastExchange), new(stdExchange)} {
		if _, ok := x.(rawPather); !ok {
			t.Errorf("%T cannot keep a raw path", x)
		}
	}
}
