;; loop_if loops forever in handle_request when the request has an
;; "x-loop" header, and continues otherwise.
(module
  (import "http_handler" "get_header_values" (func $get_header_values (param i32 i32 i32 i32 i32) (result i64)))
  (memory (export "memory") 1)
  (data (i32.const 0) "x-loop")
  (func (export "handle_request") (result i64)
    (if (i64.ne (call $get_header_values (i32.const 0) (i32.const 0) (i32.const 6) (i32.const 64) (i32.const 0)) (i64.const 0))
      (then (loop $forever (br $forever))))
    (i64.const 1))
  (func (export "handle_response") (param i32 i32)))
