;; version sets the response header "x-version: v000" and continues. Tests
;; make new modules by patching the bytes "v000" in the binary.
(module
  (import "http_handler" "set_header_value" (func $set_header_value (param i32 i32 i32 i32 i32)))
  (memory (export "memory") 1)
  (data (i32.const 0) "x-version")
  (data (i32.const 16) "v000")
  (func (export "handle_request") (result i64)
    (call $set_header_value (i32.const 1) (i32.const 0) (i32.const 9) (i32.const 16) (i32.const 4))
    (i64.const 1))
  (func (export "handle_response") (param i32 i32)))
