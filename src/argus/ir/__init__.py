"""The argus IR: what a traced kernel is, for everything that reads it (the verifier, the interpreter, the code
generator, the cost model).

Owns `types` (the scalar type system: `DType` and its instances), `expr` (scalar expressions), `nodes` (buffers,
tile references, statements, the kernel), `tags` (data-flow invariants), `printer` (the IR as text, ``argus ir``)
and `serialize` (the plain-data form in which IR crosses a process boundary). Must not know about NVRTC or Z3.
"""
