package persistence

import "testing"

func TestSyncStandbyCount(t *testing.T) {
	for names, want := range map[string]int{
		"":                                 0,
		"  ":                               0,
		"ANY 1 (pgautofailover_standby_2)": 1,
		"FIRST 2 (a, b, c)":                2,
		"any 3(a,b,c)":                     3,
		"2 (a, b)":                         2,
		"pgautofailover_standby_1":         1,
		"a, b":                             1,
		`"ANY" (x)`:                        1,
	} {
		if got := syncStandbyCount(names); got != want {
			t.Errorf("syncStandbyCount(%q) = %d, want %d", names, got, want)
		}
	}
}
