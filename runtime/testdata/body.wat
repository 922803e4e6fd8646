;; body reads the whole request body (with buffer_request, so the next
;; handler still gets it) and copies it into the request header
;; "x-guest-body"; in handle_response it rewrites the response body to
;; "wrapped:" + the original (with buffer_response). _initialize asks for
;; all three features; this host grants two.
(module
  (import "http_handler" "enable_features" (func $enable_features (param i32) (result i32)))
  (import "http_handler" "read_body" (func $read_body (param i32 i32 i32) (result i64)))
  (import "http_handler" "write_body" (func $write_body (param i32 i32 i32)))
  (import "http_handler" "set_header_value" (func $set_header_value (param i32 i32 i32 i32 i32)))
  (memory (export "memory") 2)
  (data (i32.const 0) "x-guest-body")
  (data (i32.const 16) "wrapped:")
  (func $read_all (param $kind i32) (result i32)
    (local $n i32) (local $r i64)
    (loop $more
      (local.set $r (call $read_body (local.get $kind)
        (i32.add (i32.const 1024) (local.get $n)) (i32.const 7)))
      (local.set $n (i32.add (local.get $n) (i32.wrap_i64 (local.get $r))))
      (br_if $more (i64.eqz (i64.shr_u (local.get $r) (i64.const 32)))))
    (local.get $n))
  (func (export "_initialize")
    (drop (call $enable_features (i32.const 7))))
  (func (export "handle_request") (result i64)
    (call $set_header_value (i32.const 0) (i32.const 0) (i32.const 12)
      (i32.const 1024) (call $read_all (i32.const 0)))
    (i64.const 1))
  (func (export "handle_response") (param i32 i32)
    (local $n i32)
    (local.set $n (call $read_all (i32.const 1)))
    (call $write_body (i32.const 1) (i32.const 16) (i32.const 8))
    (call $write_body (i32.const 1) (i32.const 1024) (local.get $n))))
