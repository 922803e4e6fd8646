package proxy

import (
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/sluicehq/sluice/host/proxy/internal/balance"
)

// TestBalanceSchema: the values the balance attribute accepts are the
// policies balance.New knows.
func TestBalanceSchema(t *testing.T) {
	f, _ := reflect.TypeFor[Options]().FieldByName("Balance")
	_, opts, _ := strings.Cut(f.Tag.Get("hcl"), ",")
	got := strings.Split(strings.TrimPrefix(opts, "oneof="), "|")
	if !slices.Equal(got, balance.Names) {
		t.Errorf("balance accepts %v, balance.Names is %v", got, balance.Names)
	}
}

// TestDefaultsFillZero: a zero Options gets the same settings as
// Defaults, so Go users and config files share the defaults.
func TestDefaultsFillZero(t *testing.T) {
	zero, err := (&Options{}).settings()
	if err != nil {
		t.Fatal(err)
	}
	def, err := Defaults().settings()
	if err != nil {
		t.Fatal(err)
	}
	if zero != def {
		t.Errorf("zero options: %+v\ndefaults:     %+v", zero, def)
	}
	if def.dialTimeout != 5e9 {
		t.Errorf("dial_timeout default %v, want 5s", def.dialTimeout)
	}
}
