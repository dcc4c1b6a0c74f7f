"""The CUDA backend slice: ``target`` (nvptx64 targets and the IR conventions codegen
follows), ``compiler`` (LLVM IR -> PTX with libdevice; no GPU needed), ``driver`` (the
CUDA driver API through cuda-bindings). Nothing is imported here, so listing the package
never loads llvmlite or CUDA."""
