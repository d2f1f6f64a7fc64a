/* Our own loader for ELF64 shared objects held in memory (no dlopen, no
 * files). The rules it enforces are listed in runtime_internal.h; in short:
 * one anonymous mapping for the span of the PT_LOAD segments, file bytes
 * copied in, bss left zero, RELATIVE relocations applied, then each page
 * protected as its segments ask (never writable and executable at once,
 * RELRO read-only). Every offset, size and address read from the file is
 * checked against the file or the image before use.
 *
 * Machines: one row of g_machines per supported e_machine, naming its
 * RELATIVE and NONE relocation types. A machine is loadable when its row
 * exists and it is the host (ingot_elf_host_machine). */
#define _DEFAULT_SOURCE 1
#include <elf.h>
#include <errno.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "runtime_internal.h"

#define ELF_MAX_LOADS 16u
#define ELF_MAX_SPAN ((uint64_t)1 << 30)

typedef struct elf_machine_t {
  uint16_t machine;
  uint32_t reloc_relative;
  uint32_t reloc_none;
  const char* name;
} elf_machine_t;

static const elf_machine_t g_machines[] = {
    {EM_X86_64, R_X86_64_RELATIVE, R_X86_64_NONE, "x86-64"},
    {EM_AARCH64, R_AARCH64_RELATIVE, R_AARCH64_NONE, "aarch64"},
};

typedef struct elf_range_t {
  uint64_t begin, end; /* virtual addresses as linked */
} elf_range_t;

struct ingot_elf_image_t {
  ingot_allocator_t allocator;
  uint8_t* map;        /* the mapping; image vaddr v lives at map + (v - lo) */
  size_t map_bytes;
  uint64_t lo, hi;     /* page-aligned span of the PT_LOAD segments */
  uint32_t code_count; /* executable segments */
  elf_range_t code[ELF_MAX_LOADS];
  uint32_t readable_count; /* segments with PF_R: the only memory read after
                              protect_pages (the rest of the span may be
                              PROT_NONE) */
  elf_range_t readable[ELF_MAX_LOADS];
  uint64_t symtab, strtab, strsz; /* vaddrs / bytes */
  uint32_t sym_count;
};

uint16_t ingot_elf_host_machine(void) {
#if defined(__x86_64__)
  return EM_X86_64;
#elif defined(__aarch64__)
  return EM_AARCH64;
#else
  return 0;
#endif
}

static const elf_machine_t* machine_find(uint16_t machine) {
  for (size_t i = 0; i < sizeof g_machines / sizeof g_machines[0]; ++i)
    if (g_machines[i].machine == machine) return &g_machines[i];
  return NULL;
}

uint16_t ingot_elf_peek_machine(const void* data, size_t size) {
  Elf64_Ehdr eh;
  if (size < sizeof eh) return 0;
  memcpy(&eh, data, sizeof eh);
  if (memcmp(eh.e_ident, ELFMAG, SELFMAG) != 0 || eh.e_ident[EI_CLASS] != ELFCLASS64) return 0;
  return eh.e_machine;
}

/* [v, v + n) inside the image span. */
static int in_image(const ingot_elf_image_t* im, uint64_t v, uint64_t n) {
  return v >= im->lo && n <= im->hi - im->lo && v - im->lo <= (im->hi - im->lo) - n;
}

static uint8_t* at(const ingot_elf_image_t* im, uint64_t v) { return im->map + (v - im->lo); }

/* [v, v + n) inside one readable segment (so still readable once pages are
 * protected; a range that is merely inside the span may be PROT_NONE). */
static int in_readable(const ingot_elf_image_t* im, uint64_t v, uint64_t n) {
  for (uint32_t i = 0; i < im->readable_count; ++i) {
    const elf_range_t* r = &im->readable[i];
    if (v >= r->begin && n <= r->end - r->begin && v - r->begin <= (r->end - r->begin) - n) return 1;
  }
  return 0;
}

int ingot_elf_image_contains(const ingot_elf_image_t* im, const void* ptr, size_t bytes) {
  uintptr_t p = (uintptr_t)ptr, base = (uintptr_t)im->map;
  if (!(p >= base && bytes <= im->map_bytes && p - base <= im->map_bytes - bytes)) return 0;
  return in_readable(im, (uint64_t)(p - base) + im->lo, bytes);
}

int ingot_elf_image_is_code(const ingot_elf_image_t* im, const void* ptr) {
  if (!ingot_elf_image_contains(im, ptr, 1)) return 0;
  uint64_t v = (uint64_t)((uintptr_t)ptr - (uintptr_t)im->map) + im->lo;
  for (uint32_t i = 0; i < im->code_count; ++i)
    if (v >= im->code[i].begin && v < im->code[i].end) return 1;
  return 0;
}

static uint64_t page_down(uint64_t v, uint64_t page) { return v & ~(page - 1); }
static uint64_t page_up(uint64_t v, uint64_t page) { return (v + page - 1) & ~(page - 1); }

static void sort_u64(uint64_t* v, uint32_t n) {
  for (uint32_t i = 1; i < n; ++i)
    for (uint32_t j = i; j > 0 && v[j - 1] > v[j]; --j) {
      uint64_t t = v[j];
      v[j] = v[j - 1];
      v[j - 1] = t;
    }
}

/* Page protections: each page gets the union of the flags of the load
 * segments on it, RELRO pages lose write access, pages under no segment get
 * none. Refuses a page that would be writable and executable. */
static ingot_status_t protect_pages(ingot_elf_image_t* im, const Elf64_Phdr* loads,
                                    uint32_t load_count, const Elf64_Phdr* relro, uint64_t page) {
  uint64_t cuts[2 * ELF_MAX_LOADS + 4];
  uint32_t n = 0;
  cuts[n++] = im->lo;
  cuts[n++] = im->hi;
  for (uint32_t i = 0; i < load_count; ++i) {
    cuts[n++] = page_down(loads[i].p_vaddr, page);
    cuts[n++] = page_up(loads[i].p_vaddr + loads[i].p_memsz, page);
  }
  uint64_t relro_begin = 0, relro_end = 0;
  if (relro) {
    relro_begin = page_down(relro->p_vaddr, page);
    relro_end = page_down(relro->p_vaddr + relro->p_memsz, page);
    cuts[n++] = relro_begin;
    cuts[n++] = relro_end;
  }
  sort_u64(cuts, n);
  for (uint32_t c = 0; c + 1 < n; ++c) {
    uint64_t a = cuts[c], b = cuts[c + 1];
    if (a == b) continue;
    uint32_t flags = 0;
    for (uint32_t i = 0; i < load_count; ++i) {
      uint64_t sa = page_down(loads[i].p_vaddr, page);
      uint64_t sb = page_up(loads[i].p_vaddr + loads[i].p_memsz, page);
      if (sa < b && a < sb) flags |= loads[i].p_flags;
    }
    if (relro && a >= relro_begin && b <= relro_end) flags &= ~(uint32_t)PF_W;
    if ((flags & PF_W) && (flags & PF_X))
      return ingot_rt_fail(INGOT_ERROR_UNSUPPORTED,
                           "elf: page at 0x%llx would be writable and executable",
                           (unsigned long long)a);
    int prot = PROT_NONE;
    if (flags & PF_R) prot |= PROT_READ;
    if (flags & PF_W) prot |= PROT_WRITE;
    if (flags & PF_X) prot |= PROT_EXEC;
    if (mprotect(at(im, a), (size_t)(b - a), prot) != 0)
      return ingot_rt_fail(INGOT_ERROR_INTERNAL, "elf: cannot protect loaded code: mprotect: %s",
                           strerror(errno));
  }
  return INGOT_OK;
}

typedef struct elf_dynamic_t {
  uint64_t rela, relasz, relaent;
  uint64_t symtab, strtab, strsz, syment;
  uint64_t hash, gnu_hash;
  int has_rela, has_symtab, has_strtab, has_hash, has_gnu_hash;
} elf_dynamic_t;

static ingot_status_t read_dynamic(const ingot_elf_image_t* im, const Elf64_Phdr* dyn_ph,
                                   elf_dynamic_t* out) {
  memset(out, 0, sizeof *out);
  uint64_t count = dyn_ph->p_memsz / sizeof(Elf64_Dyn);
  if (!in_image(im, dyn_ph->p_vaddr, count * sizeof(Elf64_Dyn)))
    return ingot_rt_fail(INGOT_ERROR_CORRUPT, "elf: PT_DYNAMIC outside the image");
  for (uint64_t i = 0; i < count; ++i) {
    Elf64_Dyn d;
    memcpy(&d, at(im, dyn_ph->p_vaddr + i * sizeof d), sizeof d);
    uint64_t v = d.d_un.d_val;
    switch (d.d_tag) {
      case DT_NULL: return INGOT_OK;
      case DT_NEEDED:
        return ingot_rt_fail(INGOT_ERROR_UNSUPPORTED,
                             "elf: the object needs another library (DT_NEEDED)");
      case DT_TEXTREL:
        return ingot_rt_fail(INGOT_ERROR_UNSUPPORTED, "elf: text relocations (DT_TEXTREL)");
      case DT_INIT:
      case DT_FINI:
        return ingot_rt_fail(INGOT_ERROR_UNSUPPORTED, "elf: DT_INIT/DT_FINI are not run");
      case DT_INIT_ARRAYSZ:
      case DT_PREINIT_ARRAYSZ:
        if (v != 0)
          return ingot_rt_fail(INGOT_ERROR_UNSUPPORTED, "elf: initializer arrays are not run");
        break;
      case DT_FLAGS:
        if (v & DF_TEXTREL)
          return ingot_rt_fail(INGOT_ERROR_UNSUPPORTED, "elf: text relocations (DF_TEXTREL)");
        if (v & DF_STATIC_TLS)
          return ingot_rt_fail(INGOT_ERROR_UNSUPPORTED, "elf: thread-local storage");
        break;
      case DT_RELSZ:
      case DT_PLTRELSZ:
      case 35: /* DT_RELRSZ */
        if (v != 0)
          return ingot_rt_fail(INGOT_ERROR_UNSUPPORTED,
                               "elf: relocation table of type %lld (only DT_RELA is handled)",
                               (long long)d.d_tag);
        break;
      case DT_RELA: out->rela = v; out->has_rela = 1; break;
      case DT_RELASZ: out->relasz = v; break;
      case DT_RELAENT: out->relaent = v; break;
      case DT_SYMTAB: out->symtab = v; out->has_symtab = 1; break;
      case DT_STRTAB: out->strtab = v; out->has_strtab = 1; break;
      case DT_STRSZ: out->strsz = v; break;
      case DT_SYMENT: out->syment = v; break;
      case DT_HASH: out->hash = v; out->has_hash = 1; break;
      case DT_GNU_HASH: out->gnu_hash = v; out->has_gnu_hash = 1; break;
      default: break; /* informational tags (DT_SONAME, DT_FLAGS_1, ...) */
    }
  }
  return ingot_rt_fail(INGOT_ERROR_CORRUPT, "elf: PT_DYNAMIC has no DT_NULL terminator");
}

static uint32_t read_u32(const ingot_elf_image_t* im, uint64_t v) {
  uint32_t x;
  memcpy(&x, at(im, v), 4);
  return x;
}

/* The number of dynamic symbols, from DT_HASH (nchain) or DT_GNU_HASH (the
 * last chain's end). */
static ingot_status_t count_symbols(const ingot_elf_image_t* im, const elf_dynamic_t* dyn,
                                    uint32_t* out_count) {
  if (dyn->has_hash) {
    if (!in_image(im, dyn->hash, 8)) return ingot_rt_fail(INGOT_ERROR_CORRUPT, "elf: DT_HASH outside the image");
    *out_count = read_u32(im, dyn->hash + 4);
    return INGOT_OK;
  }
  if (!dyn->has_gnu_hash) {
    *out_count = 0;
    return INGOT_OK;
  }
  uint64_t h = dyn->gnu_hash;
  if (!in_image(im, h, 16)) return ingot_rt_fail(INGOT_ERROR_CORRUPT, "elf: DT_GNU_HASH outside the image");
  uint32_t nbuckets = read_u32(im, h), symoffset = read_u32(im, h + 4);
  uint32_t bloom_words = read_u32(im, h + 8);
  uint64_t buckets = h + 16 + (uint64_t)bloom_words * 8;
  if (!in_image(im, buckets, (uint64_t)nbuckets * 4))
    return ingot_rt_fail(INGOT_ERROR_CORRUPT, "elf: DT_GNU_HASH buckets outside the image");
  uint64_t chains = buckets + (uint64_t)nbuckets * 4;
  uint32_t last = 0;
  for (uint32_t b = 0; b < nbuckets; ++b) {
    uint32_t first = read_u32(im, buckets + (uint64_t)b * 4);
    if (first > last) last = first;
  }
  if (last < symoffset) {
    *out_count = symoffset;
    return INGOT_OK;
  }
  for (uint64_t i = last;; ++i) {
    uint64_t word = chains + (i - symoffset) * 4;
    if (i >= UINT32_MAX || !in_image(im, word, 4))
      return ingot_rt_fail(INGOT_ERROR_CORRUPT, "elf: DT_GNU_HASH chain outside the image");
    if (read_u32(im, word) & 1) {
      *out_count = (uint32_t)(i + 1);
      return INGOT_OK;
    }
  }
}

static ingot_status_t apply_relocations(ingot_elf_image_t* im, const elf_machine_t* mach,
                                        const elf_dynamic_t* dyn) {
  if (dyn->relasz == 0) return INGOT_OK;
  if (!dyn->has_rela || dyn->relaent != sizeof(Elf64_Rela))
    return ingot_rt_fail(INGOT_ERROR_CORRUPT, "elf: bad DT_RELA/DT_RELAENT");
  if (dyn->relasz % sizeof(Elf64_Rela) != 0 || !in_image(im, dyn->rela, dyn->relasz))
    return ingot_rt_fail(INGOT_ERROR_CORRUPT, "elf: DT_RELA table outside the image");
  uint64_t bias = (uint64_t)(uintptr_t)im->map - im->lo;
  for (uint64_t off = 0; off < dyn->relasz; off += sizeof(Elf64_Rela)) {
    Elf64_Rela r;
    memcpy(&r, at(im, dyn->rela + off), sizeof r);
    uint32_t type = (uint32_t)ELF64_R_TYPE(r.r_info);
    if (type == mach->reloc_none) continue;
    if (type != mach->reloc_relative || ELF64_R_SYM(r.r_info) != 0)
      return ingot_rt_fail(INGOT_ERROR_UNSUPPORTED,
                           "elf: relocation type %u (symbol %u) is not supported; the object "
                           "must import nothing",
                           type, (unsigned)ELF64_R_SYM(r.r_info));
    if (!in_image(im, r.r_offset, 8))
      return ingot_rt_fail(INGOT_ERROR_CORRUPT, "elf: relocation at 0x%llx outside the image",
                           (unsigned long long)r.r_offset);
    uint64_t value = bias + (uint64_t)r.r_addend;
    memcpy(at(im, r.r_offset), &value, 8);
  }
  return INGOT_OK;
}

static ingot_status_t load(ingot_elf_image_t* im, const uint8_t* data, size_t size) {
  Elf64_Ehdr eh;
  if (size < sizeof eh) return ingot_rt_fail(INGOT_ERROR_CORRUPT, "elf: shorter than its header");
  memcpy(&eh, data, sizeof eh);
  if (memcmp(eh.e_ident, ELFMAG, SELFMAG) != 0)
    return ingot_rt_fail(INGOT_ERROR_CORRUPT, "elf: bad magic");
  if (eh.e_ident[EI_CLASS] != ELFCLASS64 || eh.e_ident[EI_DATA] != ELFDATA2LSB ||
      eh.e_ident[EI_VERSION] != EV_CURRENT || eh.e_version != EV_CURRENT)
    return ingot_rt_fail(INGOT_ERROR_UNSUPPORTED, "elf: not a little-endian ELF64 version 1 file");
  if (eh.e_type != ET_DYN)
    return ingot_rt_fail(INGOT_ERROR_UNSUPPORTED, "elf: not a shared object (e_type %u)", eh.e_type);
  const elf_machine_t* mach = machine_find(eh.e_machine);
  if (!mach || eh.e_machine != ingot_elf_host_machine())
    return ingot_rt_fail(INGOT_ERROR_UNSUPPORTED, "elf: machine %u does not run on this host",
                         eh.e_machine);
  if (eh.e_phentsize != sizeof(Elf64_Phdr) || eh.e_phnum == 0 || eh.e_phnum == PN_XNUM ||
      eh.e_phoff > size || (uint64_t)eh.e_phnum * sizeof(Elf64_Phdr) > size - eh.e_phoff)
    return ingot_rt_fail(INGOT_ERROR_CORRUPT, "elf: program headers outside the file");

  uint64_t page = (uint64_t)sysconf(_SC_PAGESIZE);
  if (page == 0 || (page & (page - 1)) != 0) page = 4096;

  Elf64_Phdr loads[ELF_MAX_LOADS], dyn_ph, relro_ph;
  memset(&dyn_ph, 0, sizeof dyn_ph);
  memset(&relro_ph, 0, sizeof relro_ph);
  uint32_t load_count = 0;
  int has_dyn = 0, has_relro = 0;
  for (uint32_t i = 0; i < eh.e_phnum; ++i) {
    Elf64_Phdr ph;
    memcpy(&ph, data + eh.e_phoff + (uint64_t)i * sizeof ph, sizeof ph);
    switch (ph.p_type) {
      case PT_LOAD:
        if (load_count == ELF_MAX_LOADS)
          return ingot_rt_fail(INGOT_ERROR_UNSUPPORTED, "elf: more than %u PT_LOAD segments",
                               ELF_MAX_LOADS);
        if (ph.p_filesz > ph.p_memsz || ph.p_offset > size || ph.p_filesz > size - ph.p_offset)
          return ingot_rt_fail(INGOT_ERROR_CORRUPT, "elf: segment %u outside the file", i);
        if (ph.p_memsz > ELF_MAX_SPAN || ph.p_vaddr > ELF_MAX_SPAN)
          return ingot_rt_fail(INGOT_ERROR_LIMIT, "elf: segment %u beyond 1 GiB", i);
        if ((ph.p_flags & PF_W) && (ph.p_flags & PF_X))
          return ingot_rt_fail(INGOT_ERROR_UNSUPPORTED,
                               "elf: segment %u is writable and executable", i);
        if (load_count > 0 && ph.p_vaddr < loads[load_count - 1].p_vaddr +
                                               loads[load_count - 1].p_memsz)
          return ingot_rt_fail(INGOT_ERROR_CORRUPT, "elf: PT_LOAD segments overlap or are unsorted");
        loads[load_count++] = ph;
        break;
      case PT_DYNAMIC: dyn_ph = ph; has_dyn = 1; break;
      case PT_GNU_RELRO: relro_ph = ph; has_relro = 1; break;
      case PT_INTERP:
        return ingot_rt_fail(INGOT_ERROR_UNSUPPORTED, "elf: has an interpreter (PT_INTERP)");
      case PT_TLS:
        return ingot_rt_fail(INGOT_ERROR_UNSUPPORTED, "elf: thread-local storage (PT_TLS)");
      default: break; /* PT_NOTE, PT_GNU_STACK, PT_GNU_EH_FRAME, PT_PHDR, ... */
    }
  }
  if (load_count == 0) return ingot_rt_fail(INGOT_ERROR_CORRUPT, "elf: no PT_LOAD segment");
  if (!has_dyn) return ingot_rt_fail(INGOT_ERROR_CORRUPT, "elf: no PT_DYNAMIC segment");

  im->lo = page_down(loads[0].p_vaddr, page);
  im->hi = page_up(loads[load_count - 1].p_vaddr + loads[load_count - 1].p_memsz, page);
  if (im->hi <= im->lo || im->hi - im->lo > ELF_MAX_SPAN)
    return ingot_rt_fail(INGOT_ERROR_LIMIT, "elf: image span beyond 1 GiB");
  if (has_relro && !in_image(im, relro_ph.p_vaddr, relro_ph.p_memsz))
    return ingot_rt_fail(INGOT_ERROR_CORRUPT, "elf: PT_GNU_RELRO outside the image");

  void* map = mmap(NULL, (size_t)(im->hi - im->lo), PROT_READ | PROT_WRITE,
                   MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (map == MAP_FAILED)
    return ingot_rt_fail(INGOT_ERROR_OUT_OF_MEMORY, "elf: cannot map %llu bytes: %s",
                         (unsigned long long)(im->hi - im->lo), strerror(errno));
  im->map = (uint8_t*)map;
  im->map_bytes = (size_t)(im->hi - im->lo);
  for (uint32_t i = 0; i < load_count; ++i) {
    memcpy(at(im, loads[i].p_vaddr), data + loads[i].p_offset, (size_t)loads[i].p_filesz);
    if (loads[i].p_flags & PF_R) {
      im->readable[im->readable_count].begin = loads[i].p_vaddr;
      im->readable[im->readable_count].end = loads[i].p_vaddr + loads[i].p_memsz;
      im->readable_count++;
    }
    if (loads[i].p_flags & PF_X) {
      im->code[im->code_count].begin = loads[i].p_vaddr;
      im->code[im->code_count].end = loads[i].p_vaddr + loads[i].p_memsz;
      im->code_count++;
    }
  }

  elf_dynamic_t dyn;
  ingot_status_t status = read_dynamic(im, &dyn_ph, &dyn);
  if (status != INGOT_OK) return status;
  status = apply_relocations(im, mach, &dyn);
  if (status != INGOT_OK) return status;

  if (dyn.has_symtab && dyn.has_strtab) {
    if (dyn.syment != sizeof(Elf64_Sym))
      return ingot_rt_fail(INGOT_ERROR_CORRUPT, "elf: bad DT_SYMENT");
    uint32_t count = 0;
    status = count_symbols(im, &dyn, &count);
    if (status != INGOT_OK) return status;
    /* Read again after protection (ingot_elf_image_symbol): readable segments only. */
    if (!in_readable(im, dyn.symtab, (uint64_t)count * sizeof(Elf64_Sym)) ||
        !in_readable(im, dyn.strtab, dyn.strsz))
      return ingot_rt_fail(INGOT_ERROR_CORRUPT, "elf: symbol tables outside the readable segments");
    im->symtab = dyn.symtab;
    im->strtab = dyn.strtab;
    im->strsz = dyn.strsz;
    im->sym_count = count;
  }
  return protect_pages(im, loads, load_count, has_relro ? &relro_ph : NULL, page);
}

ingot_status_t ingot_elf_image_load(const void* data, size_t size, ingot_allocator_t allocator,
                                    ingot_elf_image_t** out_image) {
  *out_image = NULL;
  ingot_elf_image_t* im = (ingot_elf_image_t*)ingot_rt_alloc(allocator, sizeof *im);
  if (!im) return ingot_rt_fail(INGOT_ERROR_OUT_OF_MEMORY, "elf: out of memory");
  memset(im, 0, sizeof *im);
  im->allocator = allocator;
  ingot_status_t status = load(im, (const uint8_t*)data, size);
  if (status != INGOT_OK) {
    ingot_elf_image_unload(im);
    return status;
  }
  *out_image = im;
  return INGOT_OK;
}

void* ingot_elf_image_symbol(const ingot_elf_image_t* im, const char* name) {
  size_t len = strlen(name);
  for (uint32_t i = 1; i < im->sym_count; ++i) {
    Elf64_Sym s;
    memcpy(&s, at(im, im->symtab + (uint64_t)i * sizeof s), sizeof s);
    if (s.st_shndx == SHN_UNDEF || s.st_name >= im->strsz || im->strsz - s.st_name <= len) continue;
    unsigned bind = ELF64_ST_BIND(s.st_info), type = ELF64_ST_TYPE(s.st_info);
    if ((bind != STB_GLOBAL && bind != STB_WEAK) || (type != STT_FUNC && type != STT_OBJECT))
      continue;
    const char* sym_name = (const char*)at(im, im->strtab + s.st_name);
    if (memcmp(sym_name, name, len) != 0 || sym_name[len] != '\0') continue;
    if (!in_readable(im, s.st_value, s.st_size ? s.st_size : 1)) return NULL;
    return at(im, s.st_value);
  }
  return NULL;
}

void ingot_elf_image_unload(ingot_elf_image_t* im) {
  if (!im) return;
  if (im->map) munmap(im->map, im->map_bytes);
  ingot_rt_free(im->allocator, im);
}
