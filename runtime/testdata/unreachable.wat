;; unreachable traps in handle_request.
(module
  (memory (export "memory") 1)
  (func (export "handle_request") (result i64) (unreachable))
  (func (export "handle_response") (param i32 i32)))
