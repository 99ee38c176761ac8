// Blocks of the Gaussian stream of kernels/update/philox.h into a float buffer, on the CPU: the noise of
// the fused updates (kernels/update/fused_update.h) and of philox_normal.
//
// philox_fill writes z[4j … 4j+3] = philox_normal4(key, offset, first_block + j) for j < nblocks. Two
// implementations give the same bits on the same machine:
// - the portable loop, compiled for the baseline ISA, AVX2 and x86-64-v4, chosen at load time (the
//   compiler vectorizes it, but emulates Philox's 32×32→64-bit products with 64-bit multiplies and
//   shuffles each block's four words into place);
// - on x86-64 CPUs with AVX-512 (x86-64-v4), with intrinsics: each 32-bit counter word in the low
//   half of a 64-bit lane, eight blocks to a register, so a round's two 32×32→64-bit products are
//   two vpmuludq whose results need only a shift (the high words) and no blend; the xors are one
//   three-input vpternlogd; four independent chains of eight blocks (32 blocks) run side by side,
//   since one chain alone waits on the multiplier's latency every round (eight chains
//   spill registers: 10 % slower). Box–Muller is the same C
//   code as the portable loop, compiled for the same ISA, so the two agree bit for bit
//   (tests/test_fused.cpp, PhiloxFill.Avx512EqualsPortable). On an AMD EPYC (Zen 5), one core:
//   0.95 ns per normal for the portable loop; 0.57 for the first intrinsics version (sixteen blocks
//   in 32-bit lanes, even and odd products blended; one chain). This one, against that one on a
//   Zen 4 core (family 25 model 17, 2.6 GHz): 1.00 → 0.80 ns, Philox alone 0.52 → 0.32, so
//   Box–Muller is now most of the cost. Four chains instead of eight, same core: 0.91 → 0.82 ns.
// kernels.noise: portable turns the AVX-512 loop off (for A/B timings).
#pragma once

#include <cstdint>

namespace sgmcmc::kernels {

void philox_fill(float* z, int64_t nblocks, uint64_t first_block, uint64_t key, uint64_t offset);

namespace detail {
// The portable loop alone.
void philox_fill_portable(float* z, int64_t nblocks, uint64_t first_block, uint64_t key, uint64_t offset);
// The AVX-512 loop over the first ⌊nblocks/16⌋·16 blocks; returns how many it wrote (0 where the CPU
// or the build has no AVX-512 path).
int64_t philox_fill_avx512(float* z, int64_t nblocks, uint64_t first_block, uint64_t key, uint64_t offset);
bool philox_avx512_available();
}  // namespace detail

}  // namespace sgmcmc::kernels
