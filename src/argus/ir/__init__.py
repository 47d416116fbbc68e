"""The argus IR: scalar types today; IR nodes, printer, well-formedness checks and passes later.

Owns `argus.ir.types` (the scalar type system: `DType` and its instances). Must not know about
NVRTC or Z3.
"""
