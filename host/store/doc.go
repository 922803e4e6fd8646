// Package store is the state several sluice instances share: a Redis
// server named by the config's `store "redis" {}` block. It offers what
// the rest of the host needs and no more: a GCRA rate-limit bucket taken
// with one atomic script (Take), a blob store for ACME certificates, keys
// and account data (Get, Put, Delete), and a lock with an expiry (TryLock,
// Unlock) so that one instance orders a certificate and the others pick
// it up.
//
// Where it sits on the request path: host/gateway calls Take for a rate
// limit when the requests an instance may admit locally for a key are
// used up; host/tlsconf reads and writes certificates off the request
// path. Every call to Redis carries a deadline (the store's timeout), and
// every failure is counted (Errors) under the operation that failed. A
// rate-limit call is tried once (the request is waiting); blob and lock
// calls up to three times, since a certificate lost on its way to the
// store would cost a second order at the CA. Every reply is bounded
// before the client library reads it (reply.go): the server is not
// trusted with sluice's memory.
//
// A Store is opened once per distinct block (Open) and lives as long as
// the process, like the ACME managers that hold it: reloads that keep the
// block keep the connections.
//
// It imports the Redis client only: never config, runtime nor the rest of
// host.
package store
