"""Hand-written LLVM IR kernels in SPIR-V conventions (what codegen will emit).

Rules they follow (shared/reference/llvm-backends.md): mangled builtin names, struct
arguments ``byval``, calls to ``spir_func`` definitions marked ``spir_func`` at the call
site too (a calling-convention mismatch is UB and O2 deletes the kernel body), barriers
declared ``convergent``. Work-item dimension 0 is the fastest varying (OpenCL order).
"""

BUILTINS = """
declare spir_func i64 @_Z33__spirv_BuiltInGlobalInvocationIdi(i32)
declare spir_func i64 @_Z32__spirv_BuiltInLocalInvocationIdi(i32)
declare spir_func i64 @_Z26__spirv_BuiltInWorkgroupIdi(i32)
declare spir_func i64 @_Z28__spirv_BuiltInWorkgroupSizei(i32)
declare spir_func i64 @_Z25__spirv_BuiltInGlobalSizei(i32)
declare spir_func void @_Z22__spirv_ControlBarrieriii(i32, i32, i32) #0
attributes #0 = { convergent nounwind }
"""

VADD = BUILTINS + """
define internal spir_func float @add(float %a, float %b) {
  %c = fadd float %a, %b
  ret float %c
}
define spir_kernel void @vadd(ptr addrspace(1) noalias %out, ptr addrspace(1) noalias %a,
                              ptr addrspace(1) noalias %b, i64 %n) {
entry:
  %i = call spir_func i64 @_Z33__spirv_BuiltInGlobalInvocationIdi(i32 0)
  %inb = icmp ult i64 %i, %n
  br i1 %inb, label %body, label %done
body:
  %pa = getelementptr float, ptr addrspace(1) %a, i64 %i
  %pb = getelementptr float, ptr addrspace(1) %b, i64 %i
  %po = getelementptr float, ptr addrspace(1) %out, i64 %i
  %va = load float, ptr addrspace(1) %pa
  %vb = load float, ptr addrspace(1) %pb
  %s = call spir_func float @add(float %va, float %vb)
  store float %s, ptr addrspace(1) %po
  br label %done
done:
  ret void
}
"""

# out[i] = in[i] * C, C = SpecId 7 (default 3)
SPEC_SCALE = BUILTINS + """
declare spir_func i32 @_Z20__spirv_SpecConstantii(i32, i32)
define spir_kernel void @scale(ptr addrspace(1) %out, ptr addrspace(1) %in) {
  %i = call spir_func i64 @_Z33__spirv_BuiltInGlobalInvocationIdi(i32 0)
  %c = call spir_func i32 @_Z20__spirv_SpecConstantii(i32 7, i32 3)
  %pi = getelementptr i32, ptr addrspace(1) %in, i64 %i
  %v = load i32, ptr addrspace(1) %pi
  %r = mul i32 %v, %c
  %po = getelementptr i32, ptr addrspace(1) %out, i64 %i
  store i32 %r, ptr addrspace(1) %po
  ret void
}
"""

# y[i] = p.a * x[i] + p.b for i < p.n; struct passed byval (a direct aggregate reads zeros)
STRUCT_SAXPY = BUILTINS + """
%struct.P = type { float, float, i32 }
define spir_kernel void @saxpy(ptr addrspace(1) %y, ptr addrspace(1) %x,
                               ptr byval(%struct.P) align 4 %p) {
entry:
  %i = call spir_func i64 @_Z33__spirv_BuiltInGlobalInvocationIdi(i32 0)
  %pn = getelementptr %struct.P, ptr %p, i32 0, i32 2
  %n = load i32, ptr %pn
  %n64 = sext i32 %n to i64
  %inb = icmp slt i64 %i, %n64
  br i1 %inb, label %body, label %done
body:
  %a = load float, ptr %p
  %pb = getelementptr %struct.P, ptr %p, i32 0, i32 1
  %b = load float, ptr %pb
  %px = getelementptr float, ptr addrspace(1) %x, i64 %i
  %vx = load float, ptr addrspace(1) %px
  %ax = fmul float %a, %vx
  %r = fadd float %ax, %b
  %py = getelementptr float, ptr addrspace(1) %y, i64 %i
  store float %r, ptr addrspace(1) %py
  br label %done
done:
  ret void
}
"""

# out[group] = sum of in[] over the work-group, tree reduction in local memory
LOCAL_REDUCE = BUILTINS + """
define spir_kernel void @reduce(ptr addrspace(1) %out, ptr addrspace(1) %in,
                                ptr addrspace(3) %scratch) {
entry:
  %gid = call spir_func i64 @_Z33__spirv_BuiltInGlobalInvocationIdi(i32 0)
  %lid = call spir_func i64 @_Z32__spirv_BuiltInLocalInvocationIdi(i32 0)
  %grp = call spir_func i64 @_Z26__spirv_BuiltInWorkgroupIdi(i32 0)
  %lsz = call spir_func i64 @_Z28__spirv_BuiltInWorkgroupSizei(i32 0)
  %pi = getelementptr i32, ptr addrspace(1) %in, i64 %gid
  %v = load i32, ptr addrspace(1) %pi
  %ps = getelementptr i32, ptr addrspace(3) %scratch, i64 %lid
  store i32 %v, ptr addrspace(3) %ps
  call spir_func void @_Z22__spirv_ControlBarrieriii(i32 2, i32 2, i32 272)
  %half0 = lshr i64 %lsz, 1
  br label %loop
loop:
  %s = phi i64 [ %half0, %entry ], [ %snext, %latch ]
  %cont = icmp ugt i64 %s, 0
  br i1 %cont, label %body, label %done
body:
  %active = icmp ult i64 %lid, %s
  br i1 %active, label %add, label %latch
add:
  %oidx = add i64 %lid, %s
  %po = getelementptr i32, ptr addrspace(3) %scratch, i64 %oidx
  %a = load i32, ptr addrspace(3) %ps
  %b = load i32, ptr addrspace(3) %po
  %c = add i32 %a, %b
  store i32 %c, ptr addrspace(3) %ps
  br label %latch
latch:
  call spir_func void @_Z22__spirv_ControlBarrieriii(i32 2, i32 2, i32 272)
  %snext = lshr i64 %s, 1
  br label %loop
done:
  %first = icmp eq i64 %lid, 0
  br i1 %first, label %write, label %exit
write:
  %r = load i32, ptr addrspace(3) %scratch
  %pout = getelementptr i32, ptr addrspace(1) %out, i64 %grp
  store i32 %r, ptr addrspace(1) %pout
  br label %exit
exit:
  ret void
}
"""

# *sum += in[i] with a float atomic: needs SPV_EXT_shader_atomic_float_add
FLOAT_ATOMIC_SUM = BUILTINS + """
define spir_kernel void @fsum(ptr addrspace(1) %sum, ptr addrspace(1) %in) {
  %i = call spir_func i64 @_Z33__spirv_BuiltInGlobalInvocationIdi(i32 0)
  %p = getelementptr float, ptr addrspace(1) %in, i64 %i
  %v = load float, ptr addrspace(1) %p
  %old = atomicrmw fadd ptr addrspace(1) %sum, float %v seq_cst
  ret void
}
"""

# out[row * width + col] = row * 1000 + col; SYCL dim 0 (row) is OpenCL dim 1
INDEX_2D = BUILTINS + """
define spir_kernel void @index2d(ptr addrspace(1) %out) {
  %row = call spir_func i64 @_Z33__spirv_BuiltInGlobalInvocationIdi(i32 1)
  %col = call spir_func i64 @_Z33__spirv_BuiltInGlobalInvocationIdi(i32 0)
  %width = call spir_func i64 @_Z25__spirv_BuiltInGlobalSizei(i32 0)
  %base = mul i64 %row, %width
  %idx = add i64 %base, %col
  %r1000 = mul i64 %row, 1000
  %val = add i64 %r1000, %col
  %v32 = trunc i64 %val to i32
  %p = getelementptr i32, ptr addrspace(1) %out, i64 %idx
  store i32 %v32, ptr addrspace(1) %p
  ret void
}
"""

# a program-scope variable (device global) that the kernel reads and increments
DEVICE_GLOBAL = BUILTINS + """
@counter = addrspace(1) global [4 x i32] [i32 1, i32 2, i32 3, i32 4], align 4
define spir_kernel void @bump(ptr addrspace(1) %out) {
  %i = call spir_func i64 @_Z33__spirv_BuiltInGlobalInvocationIdi(i32 0)
  %p = getelementptr [4 x i32], ptr addrspace(1) @counter, i64 0, i64 %i
  %v = load i32, ptr addrspace(1) %p
  %w = add i32 %v, 1
  store i32 %w, ptr addrspace(1) %p
  %o = getelementptr i32, ptr addrspace(1) %out, i64 %i
  store i32 %v, ptr addrspace(1) %o
  ret void
}
"""

BITREVERSE = """
declare i32 @llvm.bitreverse.i32(i32)
define spir_kernel void @brev(ptr addrspace(1) %p) {
  %v = load i32, ptr addrspace(1) %p
  %r = call i32 @llvm.bitreverse.i32(i32 %v)
  store i32 %r, ptr addrspace(1) %p
  ret void
}
"""

I128 = """
define spir_kernel void @wide(ptr addrspace(1) %p) {
  %v = load i128, ptr addrspace(1) %p
  %r = mul i128 %v, %v
  store i128 %r, ptr addrspace(1) %p
  ret void
}
"""
