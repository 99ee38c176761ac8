# The emulator's copy of a .cu file whose launches are written kernel<<<grid, block, smem, stream>>>(args…),
# which a C++ compiler does not parse (tests/cuda_emu/cuda_emu.h): `<<<` becomes
# ` | ::cuda_emu::launch_dims(` and `>>>(` becomes `).call(`, so the line reads
# kernel | ::cuda_emu::launch_dims(grid, block, smem, stream).call(args…). The copy starts with a #line
# naming the source, so compile errors and device assertions point at it.
#   cmake -DIN=src/kernels/cuda/x_cuda.cu -DOUT=build/…/kernels/cuda/x_cuda.cu -P rewrite_launches.cmake
file(READ "${IN}" text)
string(FIND "${text}" "<<<" first)
if(first EQUAL -1)
  message(FATAL_ERROR "${IN}: no <<<…>>> launch to rewrite (include the file itself instead)")
endif()
string(REPLACE "<<<" " | ::cuda_emu::launch_dims(" text "${text}")
string(REPLACE ">>>(" ").call(" text "${text}")
string(FIND "${text}" ">>>" left)
if(NOT left EQUAL -1)
  message(FATAL_ERROR "${IN}: a `>>>` not followed by `(`: a launch the rewrite does not understand")
endif()
file(WRITE "${OUT}.tmp" "#line 1 \"${IN}\"\n${text}")
configure_file("${OUT}.tmp" "${OUT}" COPYONLY)  # rewrites the copy only when it changes
file(REMOVE "${OUT}.tmp")
