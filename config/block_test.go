package config

import (
	"net/netip"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclsyntax"
)

// tagged uses every decoding the hcl tags offer.
type tagged struct {
	S        string            `hcl:"s"`
	One      string            `hcl:"one,oneof=a|b"`
	H        string            `hcl:"h,header"`
	B        bool              `hcl:"b"`
	N        int               `hcl:"n,min=1,max=9"`
	Size     int64             `hcl:"size"`
	F        float64           `hcl:"f,min=0,max=1"`
	D        time.Duration     `hcl:"d,positive"`
	L        []string          `hcl:"l"`
	Sub      []string          `hcl:"sub,subset=x|y"`
	P        []netip.Prefix    `hcl:"p"`
	M        map[string]string `hcl:"m,headers"`
	Codes    map[int]string    `hcl:"codes"`
	Child    *taggedChild      `hcl:"child,block"`
	Req      string            `hcl:"req,required"`
	Custom   int               `hcl:"custom,custom"`
	Range    hcl.Range         `hcl:",range"`
	SRange   hcl.Range         `hcl:"s,range"`
	Untagged int               // not part of the block
}

type taggedChild struct {
	V string `hcl:"v"`
}

func (c *taggedChild) SetDefaults() { c.V = "default" }

func (x *tagged) DecodeHCL(b *Body) {
	if v, ok := b.Value("custom"); ok {
		x.Custom = len(v.AsString())
	}
}

func decodeTagged(t *testing.T, src string) (*tagged, hcl.Diagnostics) {
	t.Helper()
	f, diags := hclsyntax.ParseConfig([]byte("blk {\n"+src+"\n}\n"), "t.hcl", hcl.InitialPos)
	if diags.HasErrors() {
		t.Fatal(diags)
	}
	blk := f.Body.(*hclsyntax.Body).Blocks[0].AsHCLBlock()
	d := &decoder{dir: "/base", meta: map[*Site]*siteMeta{}}
	v := &tagged{One: "a"}
	d.decodeBlock(blk, "blk", v)
	return v, d.diags
}

func TestDecodeTags(t *testing.T) {
	v, diags := decodeTagged(t, `
s = "str"
one = "b"
h = "X-Key"
b = true
n = 3
size = "2KiB"
f = 0.5
d = "150ms"
l = ["p", "q"]
sub = ["y"]
p = ["10.0.0.1", "192.168.0.0/16"]
m = { "X-A" = "1" }
codes = { 404 = "/404.html" }
req = "r"
custom = "four"
child {}
`)
	if diags.HasErrors() {
		t.Fatal(diags)
	}
	want := &tagged{S: "str", One: "b", H: "X-Key", B: true, N: 3, Size: 2048, F: 0.5, D: 150 * time.Millisecond,
		L: []string{"p", "q"}, Sub: []string{"y"},
		P: []netip.Prefix{netip.MustParsePrefix("10.0.0.1/32"), netip.MustParsePrefix("192.168.0.0/16")},
		M: map[string]string{"X-A": "1"}, Codes: map[int]string{404: "/404.html"},
		Child: &taggedChild{V: "default"}, Req: "r", Custom: 4}
	v.Range, v.SRange = hcl.Range{}, hcl.Range{}
	if !reflect.DeepEqual(v, want) {
		t.Errorf("got  %+v\nwant %+v", v, want)
	}
}

func TestDecodeTagErrors(t *testing.T) {
	for _, tt := range []struct{ src, want string }{
		{`req = "r"` + "\n" + `one = "c"`, `"c" is not a valid one`},
		{`req = "r"` + "\n" + `h = "a b"`, "Invalid header name"},
		{`req = "r"` + "\n" + `n = 10`, `"n" must be between 1 and 9`},
		{`req = "r"` + "\n" + `d = "0s"`, "d must be above zero"},
		{`req = "r"` + "\n" + `sub = ["z"]`, `"z" is not allowed in sub`},
		{`req = "r"` + "\n" + `p = ["300.0.0.1"]`, "Invalid address"},
		{`req = "r"` + "\n" + `m = { "X" = "a\nb" }`, "Invalid header value"},
		{`req = "r"` + "\n" + `codes = { 200 = "x" }`, "Invalid status code"},
		{`req = "r"` + "\n" + `nope = 1`, "Unsupported argument"},
		{``, `needs "req"`},
	} {
		_, diags := decodeTagged(t, tt.src)
		if !diags.HasErrors() || !strings.Contains(diags.Error(), tt.want) {
			t.Errorf("%q: got %v, want an error with %q", tt.src, diags, tt.want)
		}
		for _, d := range diags {
			if d.Subject == nil || d.Subject.Filename != "t.hcl" {
				t.Errorf("%q: diagnostic without a position: %v", tt.src, d)
			}
		}
	}
}

func TestReferenceFormats(t *testing.T) {
	for _, tt := range []struct {
		d    time.Duration
		want string
	}{{5 * time.Second, "5s"}, {90 * time.Second, "90s"}, {250 * time.Millisecond, "250ms"}, {0, "0s"}} {
		if got := formatDuration(tt.d); got != tt.want {
			t.Errorf("formatDuration(%v) = %q, want %q", tt.d, got, tt.want)
		}
	}
	for _, tt := range []struct {
		n    int64
		want string
	}{{0, "0B"}, {1024, "1KiB"}, {16 << 20, "16MiB"}, {1000, "1000B"}} {
		if got := formatSize(tt.n); got != tt.want {
			t.Errorf("formatSize(%d) = %q, want %q", tt.n, got, tt.want)
		}
	}
}
