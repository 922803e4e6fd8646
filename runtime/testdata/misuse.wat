;; misuse breaks the ABI in the way its config's first byte selects:
;;   p  get_uri into a buffer outside memory
;;   n  set_header_value with a name outside memory
;;   h  set_header_value with a 70000-byte value
;;   k  set_header_value with header kind 7
;;   i  set_header_value with CR LF in the value
;;   t  set_header_value on response trailers (kind 3)
;;   l  log with level 9
;;   b  read_body with body kind 5
;;   s  set_status_code 42
;;   r  (in handle_response) set a request header after next
;;   w  (in handle_response) write the response body without buffer_response
;;   T  read trailer names and values (must be empty), remove a
;;      trailer (a no-op), and continue
;; Anything else continues.
(module
  (import "http_handler" "get_config" (func $get_config (param i32 i32) (result i32)))
  (import "http_handler" "get_uri" (func $get_uri (param i32 i32) (result i32)))
  (import "http_handler" "set_header_value" (func $set_header_value (param i32 i32 i32 i32 i32)))
  (import "http_handler" "log" (func $log (param i32 i32 i32)))
  (import "http_handler" "read_body" (func $read_body (param i32 i32 i32) (result i64)))
  (import "http_handler" "write_body" (func $write_body (param i32 i32 i32)))
  (import "http_handler" "set_status_code" (func $set_status_code (param i32)))
  (import "http_handler" "get_header_names" (func $get_header_names (param i32 i32 i32) (result i64)))
  (import "http_handler" "get_header_values" (func $get_header_values (param i32 i32 i32 i32 i32) (result i64)))
  (import "http_handler" "remove_header" (func $remove_header (param i32 i32 i32)))
  (memory (export "memory") 2)
  (data (i32.const 16) "x-misuse")
  (data (i32.const 32) "a\0d\0ab")
  (func $mode (result i32)
    (drop (call $get_config (i32.const 0) (i32.const 16)))
    (i32.load8_u (i32.const 0)))
  (func (export "handle_request") (result i64)
    (local $m i32)
    (local.set $m (call $mode))
    (if (i32.eq (local.get $m) (i32.const 0x70)) ;; p
      (then (drop (call $get_uri (i32.const 0xffffff00) (i32.const 256)))))
    (if (i32.eq (local.get $m) (i32.const 0x6e)) ;; n
      (then (call $set_header_value (i32.const 0) (i32.const 0xfffffff0) (i32.const 100) (i32.const 32) (i32.const 1))))
    (if (i32.eq (local.get $m) (i32.const 0x68)) ;; h
      (then (call $set_header_value (i32.const 1) (i32.const 16) (i32.const 8) (i32.const 1024) (i32.const 70000))))
    (if (i32.eq (local.get $m) (i32.const 0x6b)) ;; k
      (then (call $set_header_value (i32.const 7) (i32.const 16) (i32.const 8) (i32.const 32) (i32.const 1))))
    (if (i32.eq (local.get $m) (i32.const 0x69)) ;; i
      (then (call $set_header_value (i32.const 1) (i32.const 16) (i32.const 8) (i32.const 32) (i32.const 5))))
    (if (i32.eq (local.get $m) (i32.const 0x74)) ;; t
      (then (call $set_header_value (i32.const 3) (i32.const 16) (i32.const 8) (i32.const 32) (i32.const 1))))
    (if (i32.eq (local.get $m) (i32.const 0x6c)) ;; l
      (then (call $log (i32.const 9) (i32.const 16) (i32.const 8))))
    (if (i32.eq (local.get $m) (i32.const 0x62)) ;; b
      (then (drop (call $read_body (i32.const 5) (i32.const 1024) (i32.const 16)))))
    (if (i32.eq (local.get $m) (i32.const 0x73)) ;; s
      (then (call $set_status_code (i32.const 42))))
    (if (i32.eq (local.get $m) (i32.const 0x54)) ;; T
      (then
        (if (i64.ne (call $get_header_names (i32.const 2) (i32.const 1024) (i32.const 64)) (i64.const 0))
          (then (unreachable)))
        (if (i64.ne (call $get_header_names (i32.const 3) (i32.const 1024) (i32.const 64)) (i64.const 0))
          (then (unreachable)))
        (if (i64.ne (call $get_header_values (i32.const 3) (i32.const 16) (i32.const 8) (i32.const 1024) (i32.const 64)) (i64.const 0))
          (then (unreachable)))
        (call $remove_header (i32.const 3) (i32.const 16) (i32.const 8))))
    (i64.const 1))
  (func (export "handle_response") (param i32 i32)
    (local $m i32)
    (local.set $m (call $mode))
    (if (i32.eq (local.get $m) (i32.const 0x72)) ;; r
      (then (call $set_header_value (i32.const 0) (i32.const 16) (i32.const 8) (i32.const 32) (i32.const 1))))
    (if (i32.eq (local.get $m) (i32.const 0x77)) ;; w
      (then (call $write_body (i32.const 1) (i32.const 32) (i32.const 1))))))
