import os, re
from pysycl.backends.native_cpu import compiler as C
_o = C.NativeCpuCompiler.optimize
def optimize(self, llvm_ir, name="module"):
    w = os.environ.get("PVW")
    if w:
        llvm_ir = re.sub(r'^(define [^\n]*\))(\s*\w*)\n\{', lambda m: m.group(1) + m.group(2) + f' "prefer-vector-width"="{w}"\n{{', llvm_ir, flags=re.M)
    return _o(self, llvm_ir, name)
C.NativeCpuCompiler.optimize = optimize
