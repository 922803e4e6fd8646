;; loop never returns from handle_request.
(module
  (memory (export "memory") 1)
  (func (export "handle_request") (result i64)
    (loop $forever (br $forever))
    (i64.const 1))
  (func (export "handle_response") (param i32 i32)))
