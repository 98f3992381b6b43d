#pragma once
/// @file cpu_isa.hpp
/// Run-time choices of the CPU kernels: the vector instruction set they use, the numerics mode and
/// the SpMM's cache budget.
///
/// The build has no -march: the hot kernels (GEMM, SpMM, the fused layer kernels) are compiled
/// once per instruction set (x86-64 baseline SSE2, AVX2 + FMA, AVX-512) and the widest one the
/// CPU supports is picked at run time, so one binary runs everywhere and uses what it finds.
///
/// Numerics. Every multi-versioned kernel computes each output element with the same operations
/// in the same order whatever the vector width (lanes only ever hold different output elements;
/// sums run in a fixed order; the GEMM's depth blocking is a constant). Whether a multiply-add is
/// fused is the one choice left, and it is the numerics mode:
/// - `portable`: never fused. Results are bit-identical on every x86-64 CPU (with or without
///   AVX-512) for a given thread count. Tests that pin bits use this mode.
/// - `fast` (default): the GEMM fuses multiply-adds where the CPU has FMA (AVX2 and AVX-512 give
///   identical bits; a CPU without FMA gives the portable bits).
/// Both modes are deterministic run to run.
#include <cstdint>
#include <string>

namespace halognn::kernels {

/// Instruction sets the CPU kernels are compiled for, narrowest first.
enum class CpuIsa { sse2 = 0, avx2 = 1, avx512 = 2 };

/// "sse2" | "avx2" | "avx512".
const char* to_string(CpuIsa isa);
/// Parses the names above; throws ConfigError otherwise.
CpuIsa parse_cpu_isa(const std::string& s);

/// The widest instruction set this CPU (and its OS) supports.
CpuIsa detected_cpu_isa();
/// What the kernels use now: the detected set, narrowed by set_cpu_isa_limit.
CpuIsa cpu_isa();
/// Caps the instruction set the kernels may use (tests compare the variants; benchmarks time
/// them). A cap above the detected set is clamped to it. Process-wide; not thread-safe against
/// kernels running concurrently.
void set_cpu_isa_limit(CpuIsa limit);

enum class CpuNumerics { fast, portable };

/// "fast" | "portable".
const char* to_string(CpuNumerics n);
/// Parses the names above; throws ConfigError naming --numerics otherwise.
CpuNumerics parse_cpu_numerics(const std::string& s);
CpuNumerics cpu_numerics();
/// Process-wide (halognn-train applies TrainConfig::numerics with it).
void set_cpu_numerics(CpuNumerics n);

/// The L3 cache size the CPU reports (sysconf), in bytes; 0 where it reports none.
double detected_l3_bytes();
/// Bytes of x's gathered rows that one SpMM feature block (and spmm_transpose's partial sums)
/// may span: a quarter of the detected L3, within [16, 64] MiB; 16 MiB where no L3 is reported
/// (docs/models.md "Kernels").
double spmm_cache_budget();
/// Columns of x one SpMM pass gathers (a feature block): all of f when `rows_touched` x f floats
/// fit spmm_cache_budget(), otherwise the widest multiple of 128 floats that fits, or where not
/// even 128 fit, the widest of 64, 32 and 16 that does (at least 16): whole register groups of
/// the SpMM's row loop (spmm_rows), so that no group gathers a narrow remainder in a pass of its
/// own.
std::int64_t spmm_feature_block(std::int64_t rows_touched, std::int64_t f);
/// Replaces spmm_cache_budget() with `bytes` (0 restores the rule above): tests reach feature
/// blocks with small matrices, benchmarks compare budgets. Process-wide, like the limits above.
void set_spmm_cache_budget(double bytes);

}  // namespace halognn::kernels
