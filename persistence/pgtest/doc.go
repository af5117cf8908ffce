// Package pgtest gives tests a PostgreSQL that is always there: the server
// named by DATABASE_URL, or else a throwaway one that Main starts with
// deploy/pg-throwaway.sh for the test binary's lifetime. It never skips: a
// test that needs PostgreSQL fails loudly when none can be had.
//
// Use it from TestMain:
//
//	func TestMain(m *testing.M) { pgtest.Main(m) }
//
// and give each test its own schema (NewStore, NewSchema), so tests can run
// in parallel and against a shared DATABASE_URL.
package pgtest
