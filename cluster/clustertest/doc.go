// Package clustertest runs real cluster members as child processes of a test
// binary, so that multi-member tests never put two protoactor members in one
// process (which races under -race, docs/cluster.md §5.1) and a crash is a real
// SIGKILL; every child is stopped when its test ends.
//
// The test binary re-executes itself with -test.run=<helper test> and
// EnvChild set. The helper test turns into the child:
//
//	func TestHelperMember(t *testing.T) {
//		if !clustertest.IsChild() {
//			t.Skip("helper process for the cluster tests")
//		}
//		clustertest.RunMember(clustertest.MemberSpec{
//			Kinds:    []*pcluster.Kind{counterKind()},
//			Handlers: map[string]clustertest.MemberHandler{"inc": inc},
//		})
//	}
//
// and the tests drive children from the parent:
//
//	ms := clustertest.StartCluster(t, 3, clustertest.MemberOptions{})
//	out, err := ms[0].Call(ctx, "inc", "match-1") // runs inc in member 0
//	ms[1].Kill()                                   // SIGKILL
//
// Members bind 127.0.0.1 port 0 and report the bound addresses, so tests do
// not race for ports. The protocol is line based: the parent writes
// "<id> <cmd> <json string>" on the child's stdin; the child answers on stdout
// with "clustertest:res <id> ok|err <json string>", announces itself with
// "clustertest:ready {...}" and may emit "clustertest:event <json string>"
// (Emit). Serve and Child are usable for any child, not only members (the
// envelope tests run a bare protoactor remote that way). A child's stderr is
// kept and logged when the test fails; a data race it reports fails the test
// unless it lies wholly in a dependency listed, with its reason, in
// AllowedRaces. RaceScanner applies the same rule to any process's stderr
// (the chaos tests of cmd/matchd run -race builds of matchd through it).
//
// Eventually (and Poll) replace sleeps with polling under a deadline;
// FreeAddr picks a loopback port free for TCP and UDP.
package clustertest
