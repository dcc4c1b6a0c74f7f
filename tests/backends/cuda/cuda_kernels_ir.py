"""Hand-written NVPTX LLVM IR kernels in the conventions of ``backends/cuda/target.py``
(what codegen emits for CUDA): ``ptx_kernel``, SYCL dim i -> CUDA axis D-1-i, local
accessors as i32 offsets into ``@__pysycl_local_mem``, the spec-constant buffer last."""

SREG = """
declare i32 @llvm.nvvm.read.ptx.sreg.tid.x()
declare i32 @llvm.nvvm.read.ptx.sreg.tid.y()
declare i32 @llvm.nvvm.read.ptx.sreg.ctaid.x()
declare i32 @llvm.nvvm.read.ptx.sreg.ctaid.y()
declare i32 @llvm.nvvm.read.ptx.sreg.ntid.x()
declare i32 @llvm.nvvm.read.ptx.sreg.ntid.y()
declare void @llvm.nvvm.barrier.cta.sync.aligned.all(i32)

define internal i64 @global_id_x() {
  %t = call i32 @llvm.nvvm.read.ptx.sreg.tid.x()
  %b = call i32 @llvm.nvvm.read.ptx.sreg.ctaid.x()
  %d = call i32 @llvm.nvvm.read.ptx.sreg.ntid.x()
  %m = mul i32 %b, %d
  %g = add i32 %m, %t
  %g64 = zext i32 %g to i64
  ret i64 %g64
}
define internal i64 @global_id_y() {
  %t = call i32 @llvm.nvvm.read.ptx.sreg.tid.y()
  %b = call i32 @llvm.nvvm.read.ptx.sreg.ctaid.y()
  %d = call i32 @llvm.nvvm.read.ptx.sreg.ntid.y()
  %m = mul i32 %b, %d
  %g = add i32 %m, %t
  %g64 = zext i32 %g to i64
  ret i64 %g64
}
"""

VADD = SREG + """
define ptx_kernel void @vadd(ptr addrspace(1) noalias %a, ptr addrspace(1) noalias %b,
                             ptr addrspace(1) noalias %c, i64 %n, ptr addrspace(1) %spec) {
entry:
  %i = call i64 @global_id_x()
  %ok = icmp ult i64 %i, %n
  br i1 %ok, label %body, label %exit
body:
  %pa = getelementptr inbounds float, ptr addrspace(1) %a, i64 %i
  %pb = getelementptr inbounds float, ptr addrspace(1) %b, i64 %i
  %pc = getelementptr inbounds float, ptr addrspace(1) %c, i64 %i
  %va = load float, ptr addrspace(1) %pa
  %vb = load float, ptr addrspace(1) %pb
  %s = fadd float %va, %vb
  store float %s, ptr addrspace(1) %pc
  br label %exit
exit:
  ret void
}
"""

# Work-group sum in local memory (tree with barriers), one atomic add per group.
# local_accessor<int, 1> = (i32 offset, i64 range) on CUDA.
REDUCE = SREG + """
@__pysycl_local_mem = external addrspace(3) global [0 x i8], align 16

define ptx_kernel void @reduce(ptr addrspace(1) %in, ptr addrspace(1) %out, i32 %local_off,
                               i64 %local_range, ptr addrspace(1) %spec) #0 {
entry:
  %tid = call i32 @llvm.nvvm.read.ptx.sreg.tid.x()
  %bdim = call i32 @llvm.nvvm.read.ptx.sreg.ntid.x()
  %gid = call i64 @global_id_x()
  %lmem = getelementptr i8, ptr addrspace(3) @__pysycl_local_mem, i32 %local_off
  %pin = getelementptr inbounds i32, ptr addrspace(1) %in, i64 %gid
  %v = load i32, ptr addrspace(1) %pin
  %pl = getelementptr inbounds i32, ptr addrspace(3) %lmem, i32 %tid
  store i32 %v, ptr addrspace(3) %pl
  call void @llvm.nvvm.barrier.cta.sync.aligned.all(i32 0)
  %half0 = lshr i32 %bdim, 1
  br label %loop
loop:
  %s = phi i32 [ %half0, %entry ], [ %snext, %latch ]
  %more = icmp ugt i32 %s, 0
  br i1 %more, label %step, label %done
step:
  %act = icmp ult i32 %tid, %s
  br i1 %act, label %add, label %latch
add:
  %j = add i32 %tid, %s
  %pj = getelementptr inbounds i32, ptr addrspace(3) %lmem, i32 %j
  %x = load i32, ptr addrspace(3) %pl
  %y = load i32, ptr addrspace(3) %pj
  %z = add i32 %x, %y
  store i32 %z, ptr addrspace(3) %pl
  br label %latch
latch:
  call void @llvm.nvvm.barrier.cta.sync.aligned.all(i32 0)
  %snext = lshr i32 %s, 1
  br label %loop
done:
  %is0 = icmp eq i32 %tid, 0
  br i1 %is0, label %write, label %exit
write:
  %r = load i32, ptr addrspace(3) %lmem
  %old = atomicrmw add ptr addrspace(1) %out, i32 %r monotonic
  br label %exit
exit:
  ret void
}
attributes #0 = { "nvvm.reqntid"="256" }
"""

# 32-bit atomics on a histogram and a 64-bit atomic total (aspect::atomic64).
HISTOGRAM = SREG + """
define ptx_kernel void @histogram(ptr addrspace(1) %data, ptr addrspace(1) %bins,
                                  ptr addrspace(1) %total, ptr addrspace(1) %spec) {
  %i = call i64 @global_id_x()
  %p = getelementptr inbounds i32, ptr addrspace(1) %data, i64 %i
  %v = load i32, ptr addrspace(1) %p
  %b = and i32 %v, 63
  %pb = getelementptr inbounds i32, ptr addrspace(1) %bins, i32 %b
  %o1 = atomicrmw add ptr addrspace(1) %pb, i32 1 monotonic
  %w = zext i32 %v to i64
  %o2 = atomicrmw add ptr addrspace(1) %total, i64 %w monotonic
  ret void
}
"""

MATH = SREG + """
declare float @__nv_sinf(float)
declare double @__nv_cos(double)
define ptx_kernel void @math(ptr addrspace(1) %in, ptr addrspace(1) %out_f,
                             ptr addrspace(1) %out_d, ptr addrspace(1) %spec) {
  %i = call i64 @global_id_x()
  %p = getelementptr inbounds float, ptr addrspace(1) %in, i64 %i
  %x = load float, ptr addrspace(1) %p
  %s = call float @__nv_sinf(float %x)
  %q = getelementptr inbounds float, ptr addrspace(1) %out_f, i64 %i
  store float %s, ptr addrspace(1) %q
  %xd = fpext float %x to double
  %c = call double @__nv_cos(double %xd)
  %r = getelementptr inbounds double, ptr addrspace(1) %out_d, i64 %i
  store double %c, ptr addrspace(1) %r
  ret void
}
"""

# Device globals: module-scope, externally_initialized so LLVM never folds the host's
# writes away.
GLOBALS = SREG + """
@dg_scale = addrspace(1) externally_initialized global [4 x float] zeroinitializer, align 16
@dg_counter = addrspace(1) externally_initialized global i32 0, align 4
define ptx_kernel void @use_globals(ptr addrspace(1) %out, ptr addrspace(1) %spec) {
  %i = call i64 @global_id_x()
  %k = and i64 %i, 3
  %p = getelementptr inbounds [4 x float], ptr addrspace(1) @dg_scale, i64 0, i64 %k
  %v = load float, ptr addrspace(1) %p
  %q = getelementptr inbounds float, ptr addrspace(1) %out, i64 %i
  store float %v, ptr addrspace(1) %q
  %o = atomicrmw add ptr addrspace(1) @dg_counter, i32 1 monotonic
  ret void
}
"""

# 2-D range: SYCL (rows, cols) -> CUDA (y, x); out[r * cols + c] = r * 1000 + c.
FILL2D = SREG + """
define ptx_kernel void @fill2d(ptr addrspace(1) %out, i64 %cols, ptr addrspace(1) %spec) {
  %c = call i64 @global_id_x()
  %r = call i64 @global_id_y()
  %row = mul i64 %r, %cols
  %idx = add i64 %row, %c
  %r1000 = mul i64 %r, 1000
  %val64 = add i64 %r1000, %c
  %val = trunc i64 %val64 to i32
  %p = getelementptr inbounds i32, ptr addrspace(1) %out, i64 %idx
  store i32 %val, ptr addrspace(1) %p
  ret void
}
"""

# Long-running kernel for profiling: iters steps of a dependent FMA chain.
SPIN = SREG + """
define ptx_kernel void @spin(ptr addrspace(1) %out, i32 %iters, ptr addrspace(1) %spec) {
entry:
  %i = call i64 @global_id_x()
  br label %loop
loop:
  %k = phi i32 [ 0, %entry ], [ %k1, %loop ]
  %acc = phi float [ 1.0, %entry ], [ %acc1, %loop ]
  %m = fmul float %acc, 0x3FF0000020000000
  %acc1 = fadd float %m, 1.0
  %k1 = add i32 %k, 1
  %more = icmp ult i32 %k1, %iters
  br i1 %more, label %loop, label %exit
exit:
  %p = getelementptr inbounds float, ptr addrspace(1) %out, i64 %i
  store float %acc1, ptr addrspace(1) %p
  ret void
}
"""
