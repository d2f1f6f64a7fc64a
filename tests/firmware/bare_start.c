/* A bare start for a firmware image, run under Linux user-mode emulation
 * (qemu-arm, qemu-riscv32) so that the cross-compiled model can be checked:
 * no C library, no semihosting; two system calls (write, exit) by inline
 * assembly. Runs ingot_model_run once on the input bytes of fw_io.c (made by
 * firmware_test.py), writes every output's raw bytes to stdout, and exits
 * with the run's status. Used by tests/firmware only. */
#include "ingot_model.h"

extern const void* const fw_inputs[INGOT_MODEL_INPUT_COUNT];
extern void* const fw_outputs[INGOT_MODEL_OUTPUT_COUNT];
extern const uint32_t fw_output_bytes[INGOT_MODEL_OUTPUT_COUNT];

static uint8_t arena[INGOT_MODEL_ARENA_BYTES] __attribute__((aligned(INGOT_MODEL_ARENA_ALIGN)));

#if defined(__arm__)
#define SYS_WRITE 4
#define SYS_EXIT 1
static long sys3(long n, long a, long b, long c) {
  register long r7 __asm__("r7") = n;
  register long r0 __asm__("r0") = a;
  register long r1 __asm__("r1") = b;
  register long r2 __asm__("r2") = c;
  __asm__ volatile("svc 0" : "+r"(r0) : "r"(r7), "r"(r1), "r"(r2) : "memory");
  return r0;
}
#elif defined(__riscv)
#define SYS_WRITE 64
#define SYS_EXIT 93
static long sys3(long n, long a, long b, long c) {
  register long a7 __asm__("a7") = n;
  register long a0 __asm__("a0") = a;
  register long a1 __asm__("a1") = b;
  register long a2 __asm__("a2") = c;
  __asm__ volatile("ecall" : "+r"(a0) : "r"(a7), "r"(a1), "r"(a2) : "memory");
  return a0;
}
#else
#error "bare_start.c: ARM or RISC-V only"
#endif

void _start(void) {
  int rc = ingot_model_run(arena, fw_inputs, fw_outputs);
  for (uint32_t i = 0; rc == 0 && i < INGOT_MODEL_OUTPUT_COUNT; ++i) {
    const uint8_t* p = (const uint8_t*)fw_outputs[i];
    uint32_t left = fw_output_bytes[i];
    while (left) {
      long n = sys3(SYS_WRITE, 1, (long)p, (long)left);
      if (n <= 0) {
        rc = 3;
        break;
      }
      p += n;
      left -= (uint32_t)n;
    }
  }
  sys3(SYS_EXIT, rc < 0 ? 100 - rc : rc, 0, 0);
  for (;;) {
  }
}
