;; wasi writes a line to stdout with WASI fd_write and one with log, then
;; continues.
(module
  (import "wasi_snapshot_preview1" "fd_write" (func $fd_write (param i32 i32 i32 i32) (result i32)))
  (import "http_handler" "log" (func $log (param i32 i32 i32)))
  (memory (export "memory") 1)
  (data (i32.const 0) "hello from stdout\n")
  (data (i32.const 32) "hello from log")
  ;; iovec at 64: base 0, len 18
  (data (i32.const 64) "\00\00\00\00\12\00\00\00")
  (func (export "handle_request") (result i64)
    (drop (call $fd_write (i32.const 1) (i32.const 64) (i32.const 1) (i32.const 80)))
    (call $log (i32.const 0) (i32.const 32) (i32.const 14))
    (i64.const 1))
  (func (export "handle_response") (param i32 i32)))
