package protocol

import (
	"reflect"
	"testing"
)

func TestIntentsEqual(t *testing.T) {
	samples := sampleIntents()
	for i, a := range samples {
		for j, b := range samples {
			if got := IntentsEqual(a, b); got != (i == j) {
				t.Errorf("IntentsEqual(%#v, %#v) = %v", a, b, got)
			}
		}
		p := reflect.New(reflect.TypeOf(a))
		p.Elem().Set(reflect.ValueOf(a))
		if !IntentsEqual(a, p.Interface().(Intent)) || !IntentsEqual(p.Interface().(Intent), a) {
			t.Errorf("%T: pointer form differs from value form", a)
		}
		if !IntentsEqual(a, CloneIntent(a)) {
			t.Errorf("%T: clone differs", a)
		}
		if IntentsEqual(a, nil) || IntentsEqual(nil, a) {
			t.Errorf("%T equals nil", a)
		}
		if IntentsEqual(a, UnknownIntent{Key: a.IntentKind()}) {
			t.Errorf("%T equals UnknownIntent with its key", a)
		}
	}
	tests := []struct {
		name string
		a, b Intent
		want bool
	}{
		{"nil nil", nil, nil, true},
		{"typed nil pointer is nil", (*Call)(nil), nil, true},
		{"mulligan nil vs empty", Mulligan{}, Mulligan{HandIndexes: []int{}}, true},
		{"mulligan order matters", Mulligan{HandIndexes: []int{1, 2}}, Mulligan{HandIndexes: []int{2, 1}}, false},
		{"booster nil vs set", Attack{BoosterSlot: nil}, Attack{BoosterSlot: IntPtr(0)}, false},
		{"booster equal values", Attack{BoosterSlot: IntPtr(1)}, Attack{BoosterSlot: IntPtr(1)}, true},
		{"guard discard nil vs set", Guard{PrintingID: "a"}, Guard{PrintingID: "a", DiscardPrintingID: StringPtr("a")}, false},
		{"guard discard equal", Guard{PrintingID: "a", DiscardPrintingID: StringPtr("b")}, Guard{PrintingID: "a", DiscardPrintingID: StringPtr("b")}, true},
		{"activate discard differs", ActivateAbility{InstanceID: 1, DiscardPrintingID: StringPtr("b")}, ActivateAbility{InstanceID: 1, DiscardPrintingID: StringPtr("c")}, false},
		{"call slot differs", Call{PrintingID: "a", Slot: 1}, Call{PrintingID: "a", Slot: 2}, false},
		{"unknown keys", UnknownIntent{Key: 30}, UnknownIntent{Key: 30}, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := IntentsEqual(tt.a, tt.b); got != tt.want {
				t.Errorf("IntentsEqual = %v, want %v", got, tt.want)
			}
		})
	}
}

func TestIntentsEqualDoesNotAllocate(t *testing.T) {
	a, b := sampleIntents(), sampleIntents()
	allocs := testing.AllocsPerRun(100, func() {
		for i := range a {
			if !IntentsEqual(a[i], b[i]) {
				t.Fatal("not equal")
			}
		}
	})
	if allocs != 0 {
		t.Errorf("IntentsEqual allocates %.1f times per run", allocs)
	}
}

func TestCloneIntentIsDeep(t *testing.T) {
	m := Mulligan{HandIndexes: []int{1, 2}}
	mc := CloneIntent(m).(Mulligan)
	mc.HandIndexes[0] = 9
	if m.HandIndexes[0] != 1 {
		t.Error("Mulligan clone shares its slice")
	}
	a := Attack{BoosterSlot: IntPtr(1)}
	ac := CloneIntent(&a).(Attack)
	*ac.BoosterSlot = 2
	if *a.BoosterSlot != 1 {
		t.Error("Attack clone shares BoosterSlot")
	}
	g := Guard{DiscardPrintingID: StringPtr("x")}
	gc := CloneIntent(g).(Guard)
	*gc.DiscardPrintingID = "y"
	if *g.DiscardPrintingID != "x" {
		t.Error("Guard clone shares DiscardPrintingID")
	}
	act := ActivateAbility{DiscardPrintingID: StringPtr("x")}
	actc := CloneIntent(act).(ActivateAbility)
	*actc.DiscardPrintingID = "y"
	if *act.DiscardPrintingID != "x" {
		t.Error("ActivateAbility clone shares DiscardPrintingID")
	}
	if CloneIntent(nil) != nil || CloneIntent((*Ride)(nil)) != nil {
		t.Error("nil clones to non-nil")
	}
}
