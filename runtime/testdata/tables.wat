;; tables can change its table (table.set in handle_request), so it is
;; not snapshotted: each instance runs its start-up, which sets the
;; global $started, and handle_request sets the response header
;; "x-started" to '0'+$started.
(module
  (import "http_handler" "set_header_value" (func $set_header_value (param i32 i32 i32 i32 i32)))
  (memory (export "memory") 1)
  (table 1 funcref)
  (global $started (mut i32) (i32.const 0))
  (data (i32.const 0) "x-started")
  (func $f)
  (elem declare func $f)
  (func (export "_initialize")
    (global.set $started (i32.const 1)))
  (func (export "handle_request") (result i64)
    (table.set 0 (i32.const 0) (ref.func $f))
    (i32.store8 (i32.const 16) (i32.add (global.get $started) (i32.const 48)))
    (call $set_header_value (i32.const 1) (i32.const 0) (i32.const 9) (i32.const 16) (i32.const 1))
    (i64.const 1))
  (func (export "handle_response") (param i32 i32)))
