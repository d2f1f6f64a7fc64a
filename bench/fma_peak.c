/* FMA peak of this machine, for bench/bench.py (built at run time with the
 * system C compiler and -march=native).
 *
 * Each thread runs CHAINS independent FMA chains (acc = acc * m + a) on the
 * widest float vector the compiler targets: 16 lanes with AVX-512F, 8 with
 * AVX2+FMA (or AVX-512 when the compiler is asked for 256-bit vectors), 4 with
 * NEON, 1 otherwise. CHAINS is at least FMA latency x FMA ports on current
 * cores (4-5 cycles x 2 ports), so the chains keep every FMA unit busy, and
 * small enough that the chains stay in registers: 16 where the ISA has 32
 * vector registers, 12 with AVX2's 16 (16 chains there spilled three
 * accumulators to the stack, and the store-to-load latency halved the figure:
 * 31 against 58 GFLOP/s on a Zen 2 class core).
 *
 *   fma_peak [THREADS] [SECONDS_PER_TRIAL]
 *
 * Prints, one `key value` per line:
 *   isa           the vector flavour used
 *   lanes         float lanes per vector
 *   gflops_1      best of 5 trials, one thread
 *   gflops_all    best of 5 trials, THREADS threads at once (default: online CPUs)
 *   threads       THREADS
 *   int8_isa      the 4-way int8 dot product used (vpdpbusd of AVX512-VNNI
 *                 or AVX-VNNI, sdot of AArch64 dotprod; without those on x86,
 *                 AVX2's vpmaddubsw + vpmaddwd + vpaddd, what the llvm target's
 *                 dot4s becomes there), or none
 *   gops8_1       int8 peak, one thread: GOP/s, a multiply-add = 2 ops, from
 *                 DOT_CHAINS independent dot-product chains (best of 5)
 *   gops8_all     the same, THREADS threads at once
 * (the int8 lines only where int8_isa is not none)
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#if defined(__AVX512F__)
#include <immintrin.h>
#define ISA "avx512"
#define LANES 16
typedef __m512 vec_t;
#define VSET(x) _mm512_set1_ps(x)
#define VFMA(a, b, c) _mm512_fmadd_ps(a, b, c)
static float vsum(vec_t v) { return _mm512_reduce_add_ps(v); }
#elif defined(__AVX2__) && defined(__FMA__)
#include <immintrin.h>
#define ISA "avx2"
#define LANES 8
typedef __m256 vec_t;
#define VSET(x) _mm256_set1_ps(x)
#define VFMA(a, b, c) _mm256_fmadd_ps(a, b, c)
static float vsum(vec_t v) {
  float t[8];
  _mm256_storeu_ps(t, v);
  return t[0] + t[1] + t[2] + t[3] + t[4] + t[5] + t[6] + t[7];
}
#elif defined(__aarch64__)
#include <arm_neon.h>
#define ISA "neon"
#define LANES 4
typedef float32x4_t vec_t;
#define VSET(x) vdupq_n_f32(x)
#define VFMA(a, b, c) vfmaq_f32(c, a, b)
static float vsum(vec_t v) { return vaddvq_f32(v); }
#else
#include <math.h>
#define ISA "scalar"
#define LANES 1
typedef float vec_t;
#define VSET(x) (x)
#define VFMA(a, b, c) fmaf(a, b, c)
static float vsum(vec_t v) { return v; }
#endif

#if defined(__AVX512F__) || defined(__aarch64__)
#define CHAINS 16
#else
#define CHAINS 12
#endif
#define INNER 1000

/* STEP(0) ... STEP(n - 1), for the chain counts used here. */
#define STEPS_10 STEP(0) STEP(1) STEP(2) STEP(3) STEP(4) STEP(5) STEP(6) STEP(7) STEP(8) STEP(9)
#define STEPS_12 STEPS_10 STEP(10) STEP(11)
#define STEPS_16 STEPS_12 STEP(12) STEP(13) STEP(14) STEP(15)
#define STEPS_(n) STEPS_##n
#define STEPS(n) STEPS_(n)

/* The 4-way int8 dot product (acc += sum of 4 u8*s8 products per 32-bit
 * lane): what the llvm target's dot4 becomes where the CPU has it. */
#if defined(__AVX512VNNI__) && defined(__AVX512F__)
#define DOT_ISA "avx512vnni"
#define DOT_MACS 64
typedef __m512i dvec_t;
#define DSET(x) _mm512_set1_epi32(x)
#define DDOT(acc, a, b) _mm512_dpbusd_epi32(acc, a, b)
static int dsum(dvec_t v) { return _mm512_reduce_add_epi32(v); }
#elif defined(__AVXVNNI__)
#define DOT_ISA "avxvnni"
#define DOT_MACS 32
typedef __m256i dvec_t;
#define DSET(x) _mm256_set1_epi32(x)
#define DDOT(acc, a, b) _mm256_dpbusd_avx_epi32(acc, a, b)
static int dsum(dvec_t v) {
  int t[8];
  _mm256_storeu_si256((__m256i*)t, v);
  return t[0] + t[1] + t[2] + t[3] + t[4] + t[5] + t[6] + t[7];
}
#elif defined(__aarch64__) && defined(__ARM_FEATURE_DOTPROD)
#define DOT_ISA "sdot"
#define DOT_MACS 16
typedef int32x4_t dvec_t;
#define DSET(x) vdupq_n_s32(x)
#define DDOT(acc, a, b) vdotq_s32(acc, vreinterpretq_s8_s32(a), vreinterpretq_s8_s32(b))
static int dsum(dvec_t v) { return vaddvq_s32(v); }
#elif defined(__AVX2__)
/* No dot-product instruction: u8 x s8 pairs summed to int16 (vpmaddubsw),
 * pairs of those to int32 (vpmaddwd by ones), added to the accumulator. The
 * compiler would share one product among chains with the same operands, so
 * each chain reads its own (as a real kernel loads one operand per dot4). */
#define DOT_ISA "avx2 (vpmaddubsw+vpmaddwd)"
#define DOT_MACS 32
#define DOT_COMPOSITE 1
typedef __m256i dvec_t;
#define DSET(x) _mm256_set1_epi32(x)
#define DDOT(acc, a, b) \
  _mm256_add_epi32(acc, _mm256_madd_epi16(_mm256_maddubs_epi16(a, b), _mm256_set1_epi16(1)))
static int dsum(dvec_t v) {
  int t[8];
  _mm256_storeu_si256((__m256i*)t, v);
  return t[0] + t[1] + t[2] + t[3] + t[4] + t[5] + t[6] + t[7];
}
#endif
#if defined(DOT_COMPOSITE)
#define DOT_CHAINS 10 /* + operand, ones and two products: within 16 registers */
#else
#define DOT_CHAINS CHAINS
#endif

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* Runs iters x INNER x CHAINS vector FMAs; returns a value that depends on all of them. */
static float fma_kernel(long iters, float seed) {
  vec_t acc[CHAINS];
  for (int i = 0; i < CHAINS; ++i) acc[i] = VSET(seed + 0.001f * (float)i);
  const vec_t m = VSET(0.999999f), a = VSET(1e-7f);
  for (long it = 0; it < iters; ++it) {
    for (int j = 0; j < INNER; ++j) {
#define STEP(i) acc[i] = VFMA(acc[i], m, a);
      STEPS(CHAINS)
#undef STEP
    }
#if !defined(__aarch64__) && LANES > 1
    __asm__ volatile("" : "+x"(acc[0]));  /* keep the loop from being folded */
#endif
  }
  float s = 0.0f;
  for (int i = 0; i < CHAINS; ++i) s += vsum(acc[i]);
  return s;
}

#ifdef DOT_ISA
/* Runs iters x INNER x DOT_CHAINS vector dot products; returns a value
 * that depends on all of them (as a float, for the worker's result). */
static float dot_kernel(long iters, float seed) {
  dvec_t acc[DOT_CHAINS];
  for (int i = 0; i < DOT_CHAINS; ++i) acc[i] = DSET((int)seed + i);
  const dvec_t b = DSET(0x01ff01ff);
#if defined(DOT_COMPOSITE)
  static dvec_t src[DOT_CHAINS];
  for (int i = 0; i < DOT_CHAINS; ++i) src[i] = DSET(0x01020304 + i);
#define OPERAND(i) src[i]
#else
  const dvec_t a = DSET(0x01020304);
#define OPERAND(i) a
#endif
  for (long it = 0; it < iters; ++it) {
    for (int j = 0; j < INNER; ++j) {
#define STEP(i) acc[i] = DDOT(acc[i], OPERAND(i), b);
      STEPS(DOT_CHAINS)
#undef STEP
#if defined(DOT_COMPOSITE)
      __asm__ volatile("" ::: "memory"); /* the operands are read again each step */
#endif
    }
#if !defined(__aarch64__)
    __asm__ volatile("" : "+x"(acc[0]));
#endif
  }
  int s = 0;
  for (int i = 0; i < DOT_CHAINS; ++i) s += dsum(acc[i]);
  return (float)s;
}
#endif

typedef float (*kernel_fn)(long iters, float seed);

typedef struct {
  long iters;
  float result;
  kernel_fn kernel;
  pthread_barrier_t* barrier;
} job_t;

static void* worker(void* p) {
  job_t* j = p;
  pthread_barrier_wait(j->barrier);
  j->result = j->kernel(j->iters, 1.0f);
  return NULL;
}

/* Giga operations per second of `threads` threads each running `iters`
 * outer iterations of `kernel`, `ops` operations an inner step (all chains). */
static double trial(kernel_fn kernel, double ops, int threads, long iters) {
  pthread_t tid[256];
  job_t jobs[256];
  pthread_barrier_t barrier;
  pthread_barrier_init(&barrier, NULL, (unsigned)threads + 1);
  for (int t = 0; t < threads; ++t) {
    jobs[t].iters = iters;
    jobs[t].kernel = kernel;
    jobs[t].barrier = &barrier;
    pthread_create(&tid[t], NULL, worker, &jobs[t]);
  }
  pthread_barrier_wait(&barrier);
  double t0 = now_s();
  float sink = 0.0f;
  for (int t = 0; t < threads; ++t) {
    pthread_join(tid[t], NULL);
    sink += jobs[t].result;
  }
  double dt = now_s() - t0;
  pthread_barrier_destroy(&barrier);
  if (sink == 12345.678f) fprintf(stderr, "unlikely\n");
  return ops * (double)INNER * (double)iters * threads / dt * 1e-9;
}

/* The iteration count for about `seconds` a trial on one thread. */
static long calibrate(kernel_fn kernel, double seconds) {
  long iters = 16;
  for (;;) {
    double t0 = now_s();
    volatile float r = kernel(iters, 1.0f);
    (void)r;
    double dt = now_s() - t0;
    if (dt > seconds / 4 || iters > (1L << 40)) return (long)((double)iters * seconds / (dt > 1e-9 ? dt : 1e-9)) + 1;
    iters *= 4;
  }
}

/* Best of 5 trials on one thread and on `threads`. */
static void best_of_5(kernel_fn kernel, double ops, int threads, double seconds, double* one, double* all) {
  long iters = calibrate(kernel, seconds);
  *one = *all = 0.0;
  for (int k = 0; k < 5; ++k) {
    double g = trial(kernel, ops, 1, iters);
    if (g > *one) *one = g;
  }
  for (int k = 0; k < 5; ++k) {
    double g = trial(kernel, ops, threads, iters);
    if (g > *all) *all = g;
  }
}

int main(int argc, char** argv) {
  long ncpu = sysconf(_SC_NPROCESSORS_ONLN);
  int threads = argc > 1 ? atoi(argv[1]) : (int)(ncpu > 0 ? ncpu : 1);
  double seconds = argc > 2 ? atof(argv[2]) : 0.2;
  if (threads < 1 || threads > 256 || !(seconds > 0.0)) {
    fprintf(stderr, "usage: fma_peak [THREADS 1..256] [SECONDS_PER_TRIAL]\n");
    return 2;
  }
  double best1, bestn;
  best_of_5(fma_kernel, 2.0 * LANES * CHAINS, threads, seconds, &best1, &bestn);
  printf("isa %s\nlanes %d\ngflops_1 %.1f\ngflops_all %.1f\nthreads %d\n", ISA, LANES, best1, bestn, threads);
#ifdef DOT_ISA
  best_of_5(dot_kernel, 2.0 * DOT_MACS * DOT_CHAINS, threads, seconds, &best1, &bestn);
  printf("int8_isa %s\ngops8_1 %.1f\ngops8_all %.1f\n", DOT_ISA, best1, bestn);
#else
  printf("int8_isa none\n");
#endif
  return 0;
}
