package gateway

import (
	"context"
	"testing"
	"time"
)

type nopShared struct{}

func (nopShared) Take(context.Context, string, float64, int, int) (int, time.Duration, error) {
	return 1, 0, nil
}

func TestDefaultAllowance(t *testing.T) {
	tests := []struct {
		rate  float64
		burst int
		want  int
	}{
		{rate: 50, burst: 50, want: 1},         // low rates: every request asks the store
		{rate: 200, burst: 10, want: 2},        // 1 % of a second's rate
		{rate: 10000, burst: 8, want: 2},       // a quarter of the burst
		{rate: 1e6, burst: 1 << 20, want: 100}, // never more than 100
		{rate: 1000, burst: 1, want: 1},        // at least 1
	}
	for _, tt := range tests {
		l, err := NewLimiter(RateLimit{Rate: tt.rate, Burst: tt.burst, Shared: nopShared{}, Name: "x"})
		if err != nil {
			t.Fatal(err)
		}
		if l.allowance != tt.want {
			t.Errorf("rate %v burst %d: allowance %d, want %d", tt.rate, tt.burst, l.allowance, tt.want)
		}
	}
}
