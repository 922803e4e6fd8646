;; set_header sets the request header "x-sluice: on" and continues.
(module
  (import "http_handler" "set_header_value" (func $set_header_value (param i32 i32 i32 i32 i32)))
  (memory (export "memory") 1)
  (data (i32.const 0) "x-sluice")
  (data (i32.const 16) "on")
  (func (export "handle_request") (result i64)
    (call $set_header_value (i32.const 0) (i32.const 0) (i32.const 8) (i32.const 16) (i32.const 2))
    (i64.const 1))
  (func (export "handle_response") (param i32 i32)))
