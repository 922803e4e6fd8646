;; grow grows its memory 1 MiB at a time until memory.grow fails, then
;; traps, as a guest allocator does when it runs out of memory.
(module
  (memory (export "memory") 1)
  (func (export "handle_request") (result i64)
    (loop $more
      (br_if $more (i32.ne (memory.grow (i32.const 16)) (i32.const -1))))
    (unreachable))
  (func (export "handle_response") (param i32 i32)))
