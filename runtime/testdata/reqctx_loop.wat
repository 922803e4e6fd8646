;; reqctx_loop is reqctx (per-request state keyed by reqCtx: handle_request
;; stores the request header "x-id" in slot reqCtx, handle_response echoes
;; it as "x-id-echo") that loops forever in handle_request when the request
;; has an "x-loop" header, as a WAF does on a field that costs it more than
;; its timeout, and in handle_response when it has "x-loop-response". Other
;; requests whose handle_request ran on the instance then need its state
;; for their response phase.
;; _start enables buffer_response (needed to set headers after next).
(module
  (import "http_handler" "enable_features" (func $enable_features (param i32) (result i32)))
  (import "http_handler" "get_header_values" (func $get_header_values (param i32 i32 i32 i32 i32) (result i64)))
  (import "http_handler" "set_header_value" (func $set_header_value (param i32 i32 i32 i32 i32)))
  (memory (export "memory") 1)
  (global $next (mut i32) (i32.const 0))
  (data (i32.const 0) "x-id")
  (data (i32.const 16) "x-id-echo")
  (data (i32.const 48) "x-loop")
  (data (i32.const 64) "x-loop-response")
  ;; slots: 1024 of 32 bytes at 32768; byte 31 of a slot holds the length.
  (func (export "_start")
    (drop (call $enable_features (i32.const 2))))
  (func (export "handle_request") (result i64)
    (local $ctx i32) (local $slot i32) (local $cl i64)
    (if (i64.ne (call $get_header_values (i32.const 0) (i32.const 48) (i32.const 6) (i32.const 64) (i32.const 0)) (i64.const 0))
      (then (loop $forever (br $forever))))
    (local.set $ctx (global.get $next))
    (global.set $next (i32.and (i32.add (global.get $next) (i32.const 1)) (i32.const 1023)))
    (local.set $slot (i32.add (i32.const 32768) (i32.shl (local.get $ctx) (i32.const 5))))
    (local.set $cl (call $get_header_values (i32.const 0) (i32.const 0) (i32.const 4) (local.get $slot) (i32.const 30)))
    ;; length without the NUL when exactly one value fitted, else 0
    (i32.store8 (i32.add (local.get $slot) (i32.const 31))
      (if (result i32) (i64.eq (i64.shr_u (local.get $cl) (i64.const 32)) (i64.const 1))
        (then (i32.sub (i32.wrap_i64 (local.get $cl)) (i32.const 1)))
        (else (i32.const 0))))
    (i64.or (i64.shl (i64.extend_i32_u (local.get $ctx)) (i64.const 32)) (i64.const 1)))
  (func (export "handle_response") (param $ctx i32) (param $err i32)
    (local $slot i32)
    (if (i64.ne (call $get_header_values (i32.const 0) (i32.const 64) (i32.const 15) (i32.const 96) (i32.const 0)) (i64.const 0))
      (then (loop $forever (br $forever))))
    (local.set $slot (i32.add (i32.const 32768) (i32.shl (local.get $ctx) (i32.const 5))))
    (call $set_header_value (i32.const 1) (i32.const 16) (i32.const 9)
      (local.get $slot) (i32.load8_u (i32.add (local.get $slot) (i32.const 31))))))
