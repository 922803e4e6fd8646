;; noop continues to the next handler and does nothing else.
(module
  (memory (export "memory") 1)
  (func (export "handle_request") (result i64) (i64.const 1))
  (func (export "handle_response") (param i32 i32)))
