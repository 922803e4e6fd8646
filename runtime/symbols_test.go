package runtime

import "testing"

func TestDemangleAll(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"\t._ZN6filter11check_token17h2db70a152e43bca0E(i32,i32)", "\t.filter::check_token(i32,i32)"},
		{"._ZN49_$LT$filter..Panics$u20$as$u20$sluice..Filter$GT$14handle_request17h85d61c80492b95a1E(i32,i32,i32) i32",
			".<filter::Panics as sluice::Filter>::handle_request(i32,i32,i32) i32"},
		{"._ZN3std9panicking19begin_panic_handler28_$u7b$$u7b$closure$u7d$$u7d$17h8ef066ac4d1e7406E(i32)",
			".std::panicking::begin_panic_handler::{{closure}}(i32)"},
		{"._ZN4core3ptr13drop_in_place$LT$RF$C$BP$GT$E", "._ZN4core3ptr13drop_in_place$LT$RF$C$BP$GT$E"}, // 13 bytes, then no length: left as is
		{"no symbols: .main.init.func2(i32) i32", "no symbols: .main.init.func2(i32) i32"},
		{"._ZN99short", "._ZN99short"},
		{"._ZN3fooE and ._ZN3bar3bazE", ".foo and .bar::baz"},
	} {
		if got := demangleAll(tc.in); got != tc.want {
			t.Errorf("demangleAll(%q)\n = %q\nwant %q", tc.in, got, tc.want)
		}
	}
}
