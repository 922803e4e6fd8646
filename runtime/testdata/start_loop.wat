;; start_loop loops forever in _start, so no instance of it can start.
(module
  (memory (export "memory") 1)
  (func (export "_start") (loop $forever (br $forever)))
  (func (export "handle_request") (result i64) (i64.const 1))
  (func (export "handle_response") (param i32 i32)))
