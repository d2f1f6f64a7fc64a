/* Internals of codegen/ shared by its files and its tests. */
#ifndef INGOT_CODEGEN_INTERNAL_H_
#define INGOT_CODEGEN_INTERNAL_H_

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "codegen/codegen.h"

/* Compiles C source (the module text) with the system C compiler into a
 * shared object in memory (heap, free() it), then checks it with
 * ingot_codegen_elf_check. `cc` NULL: $CC or "cc". On a compiler failure the
 * message holds the first lines of its output and the path of the kept
 * source. */
ingot_status_t ingot_codegen_c_compile(const char* source, size_t source_size,
                                       const ingot_target_t* target, const char* cc,
                                       uint8_t** out_object, size_t* out_size);

/* Checks that `data` is an ELF64 little-endian shared object for the host
 * machine that can be loaded by the runtime's loader: no DT_NEEDED, no
 * TEXTREL, no PLT relocations, only RELATIVE relocations, no undefined
 * dynamic symbols, and a defined INGOT_LIBRARY_QUERY_SYMBOL. */
ingot_status_t ingot_codegen_elf_check(const uint8_t* data, size_t size);

/* ---- External tools (codegen_tools.c), shared by the c and llvm targets. */

/* Creates `path` (which must not exist, mode 0600) with `data`. */
ingot_status_t ingot_codegen_write_file(const char* path, const void* data, size_t size);

typedef struct ingot_codegen_tool_run_t {
  int exit_code;   /* -1: killed or did not exit normally */
  bool timed_out;  /* killed after the time limit */
} ingot_codegen_tool_run_t;

/* Runs argv (no shell; argv[0] looked up on PATH) with stdin from /dev/null
 * and stdout+stderr to log_path, killing it after timeout_seconds. Fails with
 * INGOT_ERROR_NOT_FOUND when the program cannot be started. */
ingot_status_t ingot_codegen_run_tool(char* const* argv, const char* log_path, int timeout_seconds,
                                      ingot_codegen_tool_run_t* out);

/* The first max_lines lines (at most cap-1 bytes) of a log file, "" if none. */
void ingot_codegen_log_head(const char* path, char* out, size_t cap, size_t max_lines);

/* ---- Lane analysis of a VECTORIZED loop (codegen_vector.c), shared by
 * ingot_codegen_prepare and the llvm backend. */

/* A pointer-keyed memo (open addressing) for analyses on the IR DAG. */
typedef struct ingot_codegen_memo_t {
  const void** keys;
  uint8_t* values;
  size_t cap, count;
} ingot_codegen_memo_t;
void ingot_codegen_memo_clear(ingot_codegen_memo_t* mm);
/* 0: absent; else the stored value + 1. */
int ingot_codegen_memo_get(const ingot_codegen_memo_t* mm, const void* key);
void ingot_codegen_memo_put(ingot_codegen_memo_t* mm, const void* key, uint8_t value);

typedef struct ingot_codegen_lanes_t {
  uint32_t var;                 /* the loop variable */
  uint8_t* varying;             /* per var: depends on the lane */
  ingot_codegen_memo_t memo;    /* expr -> varying */
} ingot_codegen_lanes_t;
/* Marks the locals of `loop`'s body that differ between lanes (assigned a
 * varying value, or under a varying condition). Free with _free. */
void ingot_codegen_lanes_init(ingot_codegen_lanes_t* lanes, const ingot_ir_func_t* f,
                              const ingot_ir_stmt_t* loop);
void ingot_codegen_lanes_free(ingot_codegen_lanes_t* lanes);
/* Whether `e` differs between lanes (false for lanes NULL). */
bool ingot_codegen_lanes_varying(ingot_codegen_lanes_t* lanes, const ingot_ir_expr_t* e);
/* e == uniform + coef * var: true with *coef set, false when not affine. */
bool ingot_codegen_lanes_affine(ingot_codegen_lanes_t* lanes, const ingot_ir_expr_t* e, int64_t* coef);
/* Structural equality of two expressions. */
bool ingot_codegen_expr_equal(const ingot_ir_expr_t* a, const ingot_ir_expr_t* b);
/* The dtype of the first store in a statement (INVALID if none). */
ingot_dtype_t ingot_codegen_first_store_dtype(const ingot_ir_func_t* f, const ingot_ir_stmt_t* s);

/* ---- The C-family printer (codegen_cprint.c), shared by the c target and
 * the cuda/rocm targets: loop-IR expressions as C, with one function's C
 * names and scopes. Statements stay with each backend. */

/* How a dialect spells what an expression needs. Pairs are {float, double}. */
typedef struct ingot_cprint_dialect_t {
  const char* target;                           /* errors say "codegen TARGET" */
  const char* types[INGOT_DTYPE_COUNT_];        /* NULL: the dtype is refused */
  const char* f16_note;                         /* added to a float16 refusal, or NULL */
  const char* unary[INGOT_IR_UNARY_COUNT_][2];  /* float math (abs, sqrt, exp, ...) */
  const char* binary[INGOT_IR_BINARY_COUNT_][2]; /* float mod, min, max, pow */
  const char* square[2];                        /* pow(x, 2) */
  const char* nan[2];
  const char* inf[2];
  const char* int_helper;  /* prefix of abs_i64, floordiv, floormod, min_i64, max_i64, ipow */
  const char* float_to_int; /* a helper float to integer casts go through, NULL: a C cast */
  bool lazy_logic;          /* and/or as && and ||; else branch-free & and | (vectorizable loops) */
} ingot_cprint_dialect_t;

typedef struct ingot_cprint_t {
  const ingot_cprint_dialect_t* dialect;
  const ingot_ir_func_t* f;
  char** var_names;  /* per var: v_NAME, unique */
  char** buf_names;  /* per buffer: b_NAME (parameters), s_NAME (the rest) */
  uint8_t* in_scope; /* per var: declared at the current point */
  INGOT_VEC(uint32_t) scope; /* declared vars, innermost last */
  size_t max_bytes;  /* refuse to print beyond this (a DAG printed as a tree) */
} ingot_cprint_t;

/* Names `f`'s variables and buffers (the first `params` buffers are
 * parameters); _end frees them. */
void ingot_cprint_begin(ingot_cprint_t* p, const ingot_cprint_dialect_t* dialect, const ingot_ir_func_t* f,
                        uint32_t params);
void ingot_cprint_end(ingot_cprint_t* p);
ingot_status_t ingot_cprint_expr(ingot_cprint_t* p, ingot_strbuf_t* sb, const ingot_ir_expr_t* e);
/* The C type of a dtype, NULL when the dialect has none; _type fails then. */
const char* ingot_cprint_ctype(const ingot_cprint_dialect_t* d, ingot_dtype_t t);
ingot_status_t ingot_cprint_type(ingot_cprint_t* p, ingot_dtype_t t, const char** out);
/* "codegen TARGET: function 'NAME': " + the message. */
ingot_status_t ingot_cprint_fail(ingot_cprint_t* p, ingot_status_t code, const char* fmt, ...) INGOT_PRINTF(3, 4);
void ingot_cprint_declare(ingot_cprint_t* p, uint32_t var);
void ingot_cprint_scope_pop(ingot_cprint_t* p, size_t mark);
void ingot_cprint_indent(ingot_strbuf_t* sb, int depth);
/* names[i] = prefix + raw made a C identifier, unique among names[0..i). */
void ingot_cprint_unique_name(char** names, uint32_t i, const char* prefix, const char* raw);

#endif /* INGOT_CODEGEN_INTERNAL_H_ */
