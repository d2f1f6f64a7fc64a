/* Checks a built code object against what the runtime's ELF loader accepts.
 * Reads ELF64 little-endian fields by hand (no <elf.h> dependency on the
 * host's layout); every offset and size is checked before use. */
#include <string.h>

#include "codegen/codegen.h"
#include "codegen_internal.h"

enum {
  kEtDyn = 3,
  kPtLoad = 1,
  kPtDynamic = 2,
  kDtNull = 0, kDtNeeded = 1, kDtPltRelSz = 2, kDtHash = 4, kDtStrTab = 5, kDtSymTab = 6,
  kDtRela = 7, kDtRelaSz = 8, kDtRelaEnt = 9, kDtStrSz = 10, kDtSymEnt = 11, kDtRel = 17,
  kDtRelSz = 18, kDtTextRel = 22, kDtJmpRel = 23, kDtFlags = 30, kDfTextRel = 4,
  kDtInit = 12, kDtFini = 13, kDtInitArray = 25, kDtFiniArray = 26, kDtInitArraySz = 27,
  kDtPreinitArray = 32, kDtPreinitArraySz = 33, kDtRelrSz = 35, kDtRelr = 36,
  kEmX86_64 = 62, kEmAarch64 = 183, kEmRiscv = 243,
};

static uint16_t rd16(const uint8_t* p) { return (uint16_t)(p[0] | (p[1] << 8)); }
static uint32_t rd32(const uint8_t* p) {
  return (uint32_t)p[0] | ((uint32_t)p[1] << 8) | ((uint32_t)p[2] << 16) | ((uint32_t)p[3] << 24);
}
static uint64_t rd64(const uint8_t* p) { return (uint64_t)rd32(p) | ((uint64_t)rd32(p + 4) << 32); }

static bool in_bounds(size_t size, uint64_t off, uint64_t len) {
  return off <= size && len <= size - off;
}

typedef struct elf_view_t {
  const uint8_t* data;
  size_t size;
  uint64_t phoff;
  uint16_t phnum;
} elf_view_t;

/* File offset of virtual address `va` with `len` bytes, via the PT_LOAD
 * segments; false if no segment holds it in the file. */
static bool va_to_off(const elf_view_t* e, uint64_t va, uint64_t len, uint64_t* out) {
  for (uint16_t i = 0; i < e->phnum; ++i) {
    const uint8_t* ph = e->data + e->phoff + (uint64_t)i * 56;
    if (rd32(ph) != kPtLoad) continue;
    uint64_t off = rd64(ph + 8), vaddr = rd64(ph + 16), filesz = rd64(ph + 32);
    if (va >= vaddr && va - vaddr <= filesz && len <= filesz - (va - vaddr)) {
      *out = off + (va - vaddr);
      return in_bounds(e->size, *out, len);
    }
  }
  return false;
}

ingot_status_t ingot_codegen_elf_check(const uint8_t* data, size_t size) {
  if (!data || size < 64 || memcmp(data, "\177ELF", 4) != 0)
    return ingot_fail(INGOT_ERROR_CORRUPT, "code object: not an ELF file");
  if (data[4] != 2 || data[5] != 1)
    return ingot_fail(INGOT_ERROR_CORRUPT, "code object: not ELF64 little-endian");
  if (rd16(data + 16) != kEtDyn)
    return ingot_fail(INGOT_ERROR_CORRUPT, "code object: not a shared object");
  uint16_t machine = rd16(data + 18);
  uint32_t relative;
  switch (machine) {
    case kEmX86_64: relative = 8; break;
    case kEmAarch64: relative = 1027; break;
    case kEmRiscv: relative = 3; break;
    default: return ingot_fail(INGOT_ERROR_UNSUPPORTED, "code object: machine %u", machine);
  }
  elf_view_t e = {data, size, rd64(data + 32), rd16(data + 56)};
  if (rd16(data + 54) != 56 || !in_bounds(size, e.phoff, (uint64_t)e.phnum * 56))
    return ingot_fail(INGOT_ERROR_CORRUPT, "code object: bad program headers");

  uint64_t dyn_off = 0, dyn_size = 0;
  bool have_dyn = false;
  for (uint16_t i = 0; i < e.phnum; ++i) {
    const uint8_t* ph = data + e.phoff + (uint64_t)i * 56;
    if (rd32(ph) == kPtDynamic) {
      dyn_off = rd64(ph + 8);
      dyn_size = rd64(ph + 32);
      have_dyn = true;
    }
  }
  if (!have_dyn || !in_bounds(size, dyn_off, dyn_size))
    return ingot_fail(INGOT_ERROR_CORRUPT, "code object: no dynamic section");

  uint64_t rela = 0, relasz = 0, relaent = 24, pltrelsz = 0, symtab = 0, strtab = 0, strsz = 0;
  uint64_t syment = 24, hash = 0;
  for (uint64_t p = dyn_off; p + 16 <= dyn_off + dyn_size; p += 16) {
    int64_t tag = (int64_t)rd64(data + p);
    uint64_t val = rd64(data + p + 8);
    if (tag == kDtNull) break;
    switch (tag) {
      case kDtNeeded: return ingot_fail(INGOT_ERROR_CORRUPT, "code object: needs a shared library");
      case kDtTextRel: return ingot_fail(INGOT_ERROR_CORRUPT, "code object: has text relocations");
      case kDtFlags:
        if (val & kDfTextRel) return ingot_fail(INGOT_ERROR_CORRUPT, "code object: has text relocations");
        break;
      case kDtRel:
      case kDtRelSz:
      case kDtRelr:
      case kDtRelrSz:
        if (val) return ingot_fail(INGOT_ERROR_CORRUPT, "code object: has REL/RELR (not RELA) relocations");
        break;
      case kDtInit:
      case kDtFini:
      case kDtInitArray:
      case kDtFiniArray:
      case kDtPreinitArray:
        return ingot_fail(INGOT_ERROR_CORRUPT, "code object: has initializers or finalizers (never run)");
      case kDtInitArraySz:
      case kDtPreinitArraySz:
        if (val) return ingot_fail(INGOT_ERROR_CORRUPT, "code object: has initializers (never run)");
        break;
      case kDtRela: rela = val; break;
      case kDtRelaSz: relasz = val; break;
      case kDtRelaEnt: relaent = val; break;
      case kDtPltRelSz: pltrelsz = val; break;
      case kDtJmpRel: break;
      case kDtSymTab: symtab = val; break;
      case kDtStrTab: strtab = val; break;
      case kDtStrSz: strsz = val; break;
      case kDtSymEnt: syment = val; break;
      case kDtHash: hash = val; break;
      default: break;
    }
  }
  if (pltrelsz) return ingot_fail(INGOT_ERROR_CORRUPT, "code object: has PLT relocations");
  if (relasz) {
    uint64_t off;
    if (relaent != 24 || !va_to_off(&e, rela, relasz, &off))
      return ingot_fail(INGOT_ERROR_CORRUPT, "code object: bad relocation table");
    for (uint64_t r = 0; r + 24 <= relasz; r += 24) {
      uint32_t type = (uint32_t)rd64(data + off + r + 8);
      if (type != relative)
        return ingot_fail(INGOT_ERROR_CORRUPT,
                          "code object: relocation of type %u (only RELATIVE, %u, is loadable)", type,
                          relative);
    }
  }
  /* Symbols: the count is DT_HASH's nchain. */
  uint64_t hash_off, sym_off, str_off;
  if (!hash || !symtab || !strtab || syment != 24 || !va_to_off(&e, hash, 8, &hash_off) ||
      !va_to_off(&e, strtab, strsz, &str_off))
    return ingot_fail(INGOT_ERROR_CORRUPT, "code object: no DT_HASH / symbol table");
  uint32_t nsyms = rd32(data + hash_off + 4);
  if (!va_to_off(&e, symtab, (uint64_t)nsyms * 24, &sym_off))
    return ingot_fail(INGOT_ERROR_CORRUPT, "code object: symbol table out of bounds");
  bool have_query = false;
  for (uint32_t i = 1; i < nsyms; ++i) {
    const uint8_t* sym = data + sym_off + (uint64_t)i * 24;
    uint32_t name = rd32(sym);
    uint16_t shndx = rd16(sym + 6);
    const char* nm = "?";
    if (name < strsz && memchr(data + str_off + name, 0, strsz - name)) nm = (const char*)data + str_off + name;
    if (shndx == 0) return ingot_fail(INGOT_ERROR_CORRUPT, "code object: imports symbol '%s'", nm);
    if (strcmp(nm, INGOT_LIBRARY_QUERY_SYMBOL) == 0) have_query = true;
  }
  if (!have_query)
    return ingot_fail(INGOT_ERROR_CORRUPT, "code object: does not export %s", INGOT_LIBRARY_QUERY_SYMBOL);
  return INGOT_OK;
}
